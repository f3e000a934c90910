#!/bin/sh
# Runs "$@" with address-space randomisation off when the system allows it
# (setarch -R), else as is. ThreadSanitizer runtimes older than LLVM 18 fail
# to start ("unexpected memory mapping") on kernels with high mmap
# randomisation (vm.mmap_rnd_bits = 32); containers may forbid setarch -R.
if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
  exec setarch "$(uname -m)" -R "$@"
fi
exec "$@"
