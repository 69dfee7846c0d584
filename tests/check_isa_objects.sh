#!/bin/sh
# Our own kernels' per-ISA objects (engine/ops/isa_kernels_*.cpp) hold only their own
# instructions: the AVX2 one no AVX-512 register (zmm, ymm16-31, mask registers), so an AVX2
# CPU runs all of it; and none defines a weak symbol (an inline or template copy the linker
# could hand to code running on a CPU without those instructions).
# Usage: check_isa_objects.sh OBJECT... (the AVX2 one named *avx2*)
set -u
status=0
avx2_checked=0
for obj in "$@"; do
  case "$obj" in
    *avx2*)
      avx2_checked=1
      evex=$(objdump -d --no-show-raw-insn "$obj" | grep -E '%zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|%k[0-7]\b' | head -5)
      if [ -n "$evex" ]; then
        echo "$obj: AVX-512 instructions in the AVX2 kernels:"
        echo "$evex"
        status=1
      fi
      ;;
  esac
  weak=$(nm -C --defined-only "$obj" | grep -E ' [WVu] ' | head -5)
  if [ -n "$weak" ]; then
    echo "$obj: weak symbols another object could take this copy of:"
    echo "$weak"
    status=1
  fi
done
if [ $avx2_checked -eq 0 ]; then
  echo "no AVX2 kernel object among: $*"
  status=1
fi
[ $status -eq 0 ] && echo "ok: the AVX2 kernels hold no AVX-512 register; none of $# objects defines a weak symbol"
exit $status
