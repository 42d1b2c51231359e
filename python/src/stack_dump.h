#ifndef HVD_PYTHON_SRC_STACK_DUMP_H_
#define HVD_PYTHON_SRC_STACK_DUMP_H_

namespace hvd::python {

// Routes hvdrun's requests for a rank's Python stacks (the signal in HVD_STACK_SIGNAL) to the
// process's main thread, and has faulthandler dump from there only what is safe to read.
//
// faulthandler's dump of every thread reads the other threads' Python frames without the GIL:
// run on a thread that is not Python's (hvd's cycle thread, NCCL's, CUDA's; the kernel hands a
// process-directed signal to any thread that does not block it) while the main thread runs
// Python, it reads frames as they are pushed and popped, and crashes the process
// (_Py_DumpTracebackThreads, SIGSEGV: test_stack_dump.py's
// test_stacks_asked_for_while_the_main_thread_runs_python). So the handler installed here on
// `signo`:
// - on any other thread, sends the signal on to the main thread (tgkill) and returns;
// - on the main thread holding the GIL (it was interrupted in Python: no other thread can run
//   Python until it goes on, so every frame stands still), runs faulthandler's every-thread dump
//   (its handler registered on `all_threads_signo`);
// - on the main thread without the GIL (waiting in a collective, a sleep, I/O: other threads may
//   be running Python), says so on descriptor 2 and runs the dump of the main thread alone
//   (registered on `main_only_signo`), whose frames stand still while it is interrupted.
// The two spare signals are never sent: only their handlers (faulthandler's, installed by the
// caller with faulthandler.register before this) are called. errno is kept across the handler.
// Call from the main thread (its thread id is the process id). False, with nothing changed,
// when a handler could not be read or installed.
bool RouteStackDumps(int signo, int all_threads_signo, int main_only_signo);

// Sets `signo` to SIG_IGN (a request is dropped from then on) and stops the handler from
// calling faulthandler's. Run before the interpreter's finalization (atexit), which frees
// faulthandler's registrations: a request handled after it crashed the process.
void UnrouteStackDumps();

}  // namespace hvd::python

#endif  // HVD_PYTHON_SRC_STACK_DUMP_H_
