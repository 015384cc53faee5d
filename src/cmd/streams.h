// The process's standard streams, beneath the lines written to them (cmd/cli.c's messages, cmd/log.c's
// progress): which stream holds an open progress bar, and which have lost their reader.
#ifndef VITMAE_STREAMS_H
#define VITMAE_STREAMS_H
#include <stdio.h>

// Ends the progress line drawn on the terminal, if one is open, before another line goes to f (a message
// on stderr, a report line on stdout), so that line starts a line of its own instead of following the bar;
// the next progress_update draws the bar anew below it. Nothing when no bar is open or f is neither the
// bar's stream nor a terminal (stderr to a file leaves the bar as it is).
void progress_break_line(FILE *f);
// A progress line (cmd/log.h, cmd/count_progress.h) left open on f, or ended (NULL).
void progress_set_open(FILE *f);
// The stream a progress line is left open on, or NULL.
FILE *progress_open(void);

// A standard stream (stdout or stderr) whose reader has gone: a pipe whose other end was closed
// (`vitmae train ... | head -3`), a hung-up terminal. The commands that write files ignore SIGPIPE
// (cli_ignore_sigpipe), so such a write fails (EPIPE) instead of killing them with their work
// unsaved; cli_stream_check(f), after a write to f, finds that failure and from then on sends the
// stream to /dev/null: its later lines are dropped, the work goes on and its files are written as
// usual, and the command's exit status is its own (a reader that stops reading asked for no more,
// as with `grep ... | head`). Said once on stderr for stdout (`vitmae: <command>: standard output:
// its reader has gone ...`), when stderr still works; a gone stderr is dropped in silence.
// A write that failed otherwise (a full disk) is left to cli_stdout_done (cmd/cli.h).
void cli_stream_check(FILE *f);
// SIGPIPE ignored, for the command name (cli_stream_check's line); main calls it for the commands that
// write files: train, finetune, reconstruct, attention, embed, probe (docs/interface.md, section 1).
void cli_ignore_sigpipe(const char *command);
// SIGPIPE back to its default, as for the commands that write nothing: a command's --help is only its
// usage, no work to save, so `vitmae train --help | head -3` ends at once, without a word.
void cli_default_sigpipe(void);
// "vitmae: " on stderr, "vitmae: rank R: " from the ranks after the first, into buf (32 bytes do).
const char *cli_stderr_prefix(char *buf, size_t n);
// 1 once cli_stream_check found fd's reader gone (fd 1 or 2), else 0.
int cli_stream_gone(int fd);
// fflush(stdout) where a line must be out now (before a stop signal may end the process), then
// cli_stream_check: a flush that fails keeps its errno for cli_stdout_done (cli_stdout_errno), whose own
// flush then finds only the stream's error flag ("a write to it failed" lost "No space left on device").
void cli_flush_stdout(void);
// The errno of the first failed cli_flush_stdout, or 0.
int cli_stdout_errno(void);
#endif
