// libFuzzer target: arbitrary bytes as a GGUF file, through the reader, the metadata display,
// the Llama hyperparameters, the tokenizer and a full model load. Every outcome must be a
// value (a File or an error); a crash, a sanitizer report or a leak is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gguf/file.h"
#include "memory/buffer.h"
#include "model/arch/hparams.h"
#include "model/model.h"  // and the tokenizer, wherever its header lives

namespace {

// Model::load reads a path; a memfd gives the bytes one without touching the disk.
void load_model(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz_gguf", MFD_CLOEXEC);
  if (fd < 0) return;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done == size) {
    auto model = strata::model::Model::load("/proc/self/fd/" + std::to_string(fd),
                                            strata::memory::host_buffer_type());
    (void)model;
  }
  close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = strata::gguf::File::from_memory(data, size);
  if (!file.ok()) return 0;
  for (const strata::gguf::KeyValue& kv : file->metadata()) (void)kv.value.to_display_string();
  auto hp = strata::model::read_hparams(*file);
  auto tok = strata::model::Tokenizer::from_gguf(*file);
  if (tok.ok()) (void)tok->encode("Once upon a time", true);
  // A full load only for files whose header makes sense, to keep executions fast.
  if (hp.ok() && tok.ok()) load_model(data, size);
  return 0;
}
