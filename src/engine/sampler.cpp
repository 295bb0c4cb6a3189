#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace strata::engine {
namespace {

// Softmax over the candidates' logits, in place, with the largest subtracted for stability.
void softmax(std::span<float> logits, std::span<float> p) {
  float max = -INFINITY;
  for (float l : logits) max = std::max(max, l);
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp(logits[i] - max);
    sum += p[i];
  }
  for (float& x : p) x = static_cast<float>(x / sum);
}

}  // namespace

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {}

void Sampler::accept(int32_t token) {
  recent_.push_back(token);
  while (static_cast<int32_t>(recent_.size()) > std::max(params_.repeat_last_n, 0))
    recent_.pop_front();
}

void Sampler::penalize(std::vector<Candidate>& c) const {
  const bool repeat = params_.repeat_penalty != 1.0f;
  const bool openai = params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if ((!repeat && !openai) || recent_.empty()) return;
  std::unordered_map<int32_t, int> count;
  for (int32_t t : recent_) ++count[t];
  for (Candidate& x : c) {
    const auto it = count.find(x.id);
    if (it == count.end()) continue;
    // Dividing a negative logit would raise it; multiplying lowers it as intended.
    if (repeat) {
      x.logit = x.logit > 0 ? x.logit / params_.repeat_penalty : x.logit * params_.repeat_penalty;
    }
    x.logit -=
        params_.presence_penalty + params_.frequency_penalty * static_cast<float>(it->second);
  }
}

int32_t Sampler::sample(std::span<const float> logits) {
  auto& c = candidates_;
  c.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) c[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
  penalize(c);

  if (params_.temperature <= 0.0f) {
    // First index of the maximum, like argmax in the graph.
    size_t best = 0;
    for (size_t i = 1; i < c.size(); ++i) {
      if (c[i].logit > c[best].logit) best = i;
    }
    return c[best].id;
  }

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  size_t n = c.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n), c.end(), by_logit);
  } else {
    std::sort(c.begin(), c.end(), by_logit);
  }
  c.resize(n);

  std::vector<float> l(n), p(n);
  auto probs = [&] {
    for (size_t i = 0; i < c.size(); ++i) l[i] = c[i].logit;
    softmax(std::span(l).first(c.size()), std::span(p).first(c.size()));
    for (size_t i = 0; i < c.size(); ++i) c[i].p = p[i];
  };
  probs();
  if (params_.top_p < 1.0f) {
    double cum = 0.0;
    size_t keep = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      cum += c[i].p;
      if (cum >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    c.resize(std::max<size_t>(keep, 1));
  }
  if (params_.min_p > 0.0f) {
    const float threshold = c[0].p * params_.min_p;
    size_t keep = 1;
    while (keep < c.size() && c[keep].p >= threshold) ++keep;
    c.resize(keep);
  }
  for (Candidate& x : c) x.logit /= params_.temperature;
  probs();
  std::discrete_distribution<size_t> dist(p.begin(),
                                          p.begin() + static_cast<std::ptrdiff_t>(c.size()));
  return c[dist(rng_)].id;
}

}  // namespace strata::engine
