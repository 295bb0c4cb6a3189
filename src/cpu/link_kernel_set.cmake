# Links one kernel set's objects into one relocatable object whose only global symbol is KEEP
# (the set's table), so that nothing compiled with the set's flags can stand in for baseline
# code at link time. Run by src/cpu/CMakeLists.txt as
#   cmake -DLINKER= -DOBJCOPY= -DNM= -DOBJS=a.o|b.o|... -DKEEP=symbol -DOUT=file -P this
string(REPLACE "|" ";" objs "${OBJS}")
# -r keeps comdat groups, which the final link would still merge with other copies (and then
# drop either ours or the baseline's); --force-group-allocation dissolves them here.
execute_process(COMMAND ${LINKER} -r --force-group-allocation ${objs} -o ${OUT}.tmp
  COMMAND_ERROR_IS_FATAL ANY)
# Static locals of inline functions are "unique" global symbols, which objcopy cannot make
# local; made weak first, they can be.
execute_process(COMMAND ${NM} --defined-only ${OUT}.tmp OUTPUT_VARIABLE symbols
  COMMAND_ERROR_IS_FATAL ANY)
string(REGEX MATCHALL "[^\n]* u [^\n]*" unique "${symbols}")
set(names "")
foreach(line IN LISTS unique)
  string(REGEX REPLACE "^.* u " "" name "${line}")
  string(APPEND names "${name}\n")
endforeach()
file(WRITE ${OUT}.unique "${names}")
execute_process(COMMAND ${OBJCOPY} --weaken-symbols=${OUT}.unique ${OUT}.tmp
  COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${OBJCOPY} --keep-global-symbol=${KEEP} ${OUT}.tmp ${OUT}
  COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE ${OUT}.tmp ${OUT}.unique)
