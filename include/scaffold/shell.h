/* Quoting for POSIX sh command lines (src/util/shell.c), used wherever a command is printed or
 * recorded for a user to paste (the harness's launch lines, the training outputs' rerun lines). */
#ifndef SF_SHELL_H
#define SF_SHELL_H

/* Shell-quotes one argument for display: unchanged when it holds only characters a shell takes
 * literally, otherwise in single quotes (a ' inside becomes '\''); malloc'ed. */
char *sf_shell_quote(const char *s);

#endif
