// The standard streams' state: the open progress bar and the streams whose reader has gone. See streams.h.
#include "cmd/streams.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "dist/dist.h"
#include "io/files.h"

// The stream a progress bar is drawn on and left open (no newline after it yet), or NULL. One at a time:
// a command draws one bar. Kept here rather than in Progress, so a message from anywhere can end it.
static FILE *open_bar;

void progress_break_line(FILE *f) {
    if (!open_bar || (f != open_bar && !isatty(fileno(f)))) return;
    fputc('\n', open_bar);
    fflush(open_bar);
    open_bar = NULL;
}

void progress_set_open(FILE *f) { open_bar = f; }

FILE *progress_open(void) { return open_bar; }

// The command that ignores SIGPIPE, and the streams found gone.
static const char *sigpipe_command;
static int stream_gone[3];

void cli_ignore_sigpipe(const char *command) {
    sigpipe_command = command;
    signal(SIGPIPE, SIG_IGN);
}

void cli_default_sigpipe(void) {
    sigpipe_command = NULL;
    signal(SIGPIPE, SIG_DFL);
}

const char *cli_stderr_prefix(char *buf, size_t n) {
    if (dist_rank() > 0) snprintf(buf, n, "vitmae: rank %d: ", dist_rank());
    else snprintf(buf, n, "vitmae: ");
    return buf;
}

int cli_stream_gone(int fd) { return fd >= 1 && fd <= 2 && stream_gone[fd]; }

static int stdout_errno = 0;

void cli_flush_stdout(void) {
    errno = 0;
    if (fflush(stdout) && errno && !stdout_errno) {
        stdout_errno = errno;
        // Said also where a stop signal ends the command before its own end says it (io/files.h): a
        // reader gone is cli_stream_check's to say, as at the end.
        if (sigpipe_command && errno != EPIPE && errno != EAGAIN) {   // EAGAIN: a held line given up at a stop (its reader took nothing meanwhile), as documented
            char line[384], prefix[32], why[128];
            snprintf(line, sizeof line, "%s%s: standard output: %s", cli_stderr_prefix(prefix, sizeof prefix),
                     sigpipe_command, file_reason(stdout_errno, why, sizeof why));
            file_stop_note(line);
        }
    }
    cli_stream_check(stdout);
}

int cli_stdout_errno(void) { return stdout_errno; }

// 1 when nobody reads fd any more: the read end of its pipe is closed (poll's POLLERR), or the
// terminal or socket hung up (POLLHUP). A file, a full disk, /dev/full: 0.
static int reader_gone(int fd) {
    struct pollfd p = {fd, POLLOUT, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

void cli_stream_check(FILE *f) {
    int fd = fileno(f);
    if (!sigpipe_command || !ferror(f) || fd < 1 || fd > 2 || stream_gone[fd] || !reader_gone(fd)) return;
    stream_gone[fd] = 1;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        fflush(f);   // what stdio still holds fails once more and is dropped
        dup2(null, fd);
        close(null);
    }
    clearerr(f);
    if (fd == 1 && !stream_gone[2]) {
        // cli_message's form (cmd/cli.h), written here: the command's name is one of ours, nothing to escape.
        progress_break_line(stderr);
        char prefix[32];
        fprintf(stderr, "%s%s: standard output: its reader has gone (a closed pipe, as after | head); its "
                "lines are dropped from here on and the %s goes on\n", cli_stderr_prefix(prefix, sizeof prefix),
                sigpipe_command,
                !strcmp(sigpipe_command, "train") || !strcmp(sigpipe_command, "finetune") ? "run" : "command");
        cli_stream_check(stderr);
    }
}
