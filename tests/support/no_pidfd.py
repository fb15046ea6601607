"""Run a program with pidfd_open(2) failing with ENOSYS, as on kernels before 5.3.

Usage: no_pidfd.py PROGRAM [ARG...]. Installs a seccomp filter (x86_64 only; it survives the
execve and is inherited by every thread and child) and then executes PROGRAM. Used by
tests/offline/attacks_supervisor.rs to exercise the supervisor's fallback without a pidfd.
"""

import ctypes
import os
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP = 317
SYS_PIDFD_OPEN = 434
SECCOMP_SET_MODE_FILTER = 1
AUDIT_ARCH_X86_64 = 0xC000003E
LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
ENOSYS = 38


def main():
    if os.uname().machine != "x86_64":
        sys.exit("no_pidfd.py: x86_64 only")
    program = [
        (LD_W_ABS, 0, 0, 4),  # arch
        (JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        (RET_K, 0, 0, ALLOW),
        (LD_W_ABS, 0, 0, 0),  # syscall number
        (JEQ_K, 0, 1, SYS_PIDFD_OPEN),
        (RET_K, 0, 0, ERRNO | ENOSYS),
        (RET_K, 0, 0, ALLOW),
    ]
    code = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buf = ctypes.create_string_buffer(code, len(code))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(len(program), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        sys.exit("prctl: " + os.strerror(ctypes.get_errno()))
    if libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(prog)) != 0:
        sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
    if libc.syscall(SYS_PIDFD_OPEN, os.getpid(), 0) != -1 or ctypes.get_errno() != ENOSYS:
        sys.exit("the filter did not deny pidfd_open")
    os.execv(sys.argv[1], sys.argv[1:])


main()
