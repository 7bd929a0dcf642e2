/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Command-line parsing with OpenSSH sftp-server's letters, messages and
 * exit codes, plus our own long options. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>

#include "log.h"
#include "options.h"
#include "xferlog.h"

#define QUEUE_DEPTH_DEFAULT 64
#define QUEUE_DEPTH_MAX 1024
#define WRITE_MERGE_DEFAULT (256 * 1024)
#define WRITE_MERGE_MAX (4 * 1024 * 1024)

/* Words in a -c command we parse as options (parse_shell_command). */
#define SHELL_COMMAND_WORDS_MAX 64

/* Exit status of OpenSSH's fatal() and cleanup_exit(255). */
#define EXIT_FATAL 255

/* getopt_long codes for options that have no short letter. */
enum long_only_option {
	OPT_VERSION = 256,
	OPT_HELP,
	OPT_BACKEND,
	OPT_QUEUE_DEPTH,
	OPT_WRITE_MERGE,
	OPT_NO_SPLICE,
	OPT_NO_DIRECT_SPLICE,
	OPT_CONFINE,
	OPT_XFERLOG,
	OPT_XFERLOG_FORMAT,
	OPT_ATOMIC_UPLOADS,
	OPT_FSYNC_ON_CLOSE,
	OPT_NOCACHE,
	OPT_CHECK,
};

/*
 * The leading '+' stops at the first operand, like the BSD getopt that
 * OpenSSH uses on Linux, instead of glibc's permuting.  The ':' after it
 * silences glibc's own diagnostics: sftp-server prints only its usage.
 */
static const char short_options[] = "+:d:f:l:m:M:P:p:Q:u:cehR";

static const struct option long_options[] = {
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, OPT_HELP},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"queue-depth", required_argument, NULL, OPT_QUEUE_DEPTH},
    {"write-merge", required_argument, NULL, OPT_WRITE_MERGE},
    {"no-splice", no_argument, NULL, OPT_NO_SPLICE},
    {"no-direct-splice", no_argument, NULL, OPT_NO_DIRECT_SPLICE},
    {"confine", optional_argument, NULL, OPT_CONFINE},
    {"xferlog", required_argument, NULL, OPT_XFERLOG},
    {"xferlog-format", required_argument, NULL, OPT_XFERLOG_FORMAT},
    {"atomic-uploads", no_argument, NULL, OPT_ATOMIC_UPLOADS},
    {"fsync-on-close", no_argument, NULL, OPT_FSYNC_ON_CLOSE},
    {"nocache", no_argument, NULL, OPT_NOCACHE},
    {"check", optional_argument, NULL, OPT_CHECK},
    {NULL, 0, NULL, 0},
};

/*
 * Strings handed out in struct options.  They are freed on the next call
 * so that tests can parse many command lines without leaking.
 */
static char *owned_start_dir;
static char *owned_denied;
static char *owned_allowed;
static char *owned_xferlog;

static void free_owned_strings(void)
{
	free(owned_start_dir);
	free(owned_denied);
	free(owned_allowed);
	free(owned_xferlog);
	owned_start_dir = owned_denied = owned_allowed = owned_xferlog = NULL;
}

static const char *base_name(const char *path)
{
	const char *slash;

	if (path == NULL || *path == '\0')
		return PACKAGE_NAME;
	slash = strrchr(path, '/');
	return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

static void print_usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s [-ehR] [-d start_directory] [-f log_facility] "
	        "[-l log_level]\n"
	        "\t[-P denied_requests] [-p allowed_requests] [-u umask]\n"
	        "       %s -Q protocol_feature\n",
	        prog, prog);
}

static void __attribute__((noreturn)) usage_exit(const char *prog)
{
	print_usage(stderr, prog);
	exit(1);
}

static void __attribute__((noreturn)) help_exit(const char *prog)
{
	print_usage(stdout, prog);
	printf("\n"
	       "Options beyond OpenSSH's:\n"
	       "  -m file_mode                mode of every file the server "
	       "creates\n"
	       "                              (octal, at most 0777)\n"
	       "  -M directory_mode           mode of every directory it "
	       "creates\n"
	       "                              (octal, at most 07777)\n"

	       "  --backend=auto|uring|plain  I/O back end (default auto:\n"
	       "                              io_uring if the kernel allows "
	       "it)\n"
	       "  --queue-depth=N             requests in flight, 1..%d "
	       "(default %d)\n"
	       "  --write-merge=BYTES         merge contiguous WRITEs up to "
	       "BYTES,\n"
	       "                              0..%d (default %d, 0 = off)\n"
	       "  --confine[=DIR]             no access outside DIR "
	       "(default: the\n"
	       "                              start directory), by "
	       "Landlock\n"
	       "  --xferlog=FILE              append a line per closed file "
	       "to FILE\n"
	       "  --xferlog-format=xferlog|json\n"
	       "                              its format (default xferlog)\n"
	       "  --atomic-uploads            an upload appears whole at "
	       "CLOSE or not\n"
	       "                              at all\n"
	       "  --fsync-on-close            CLOSE answers once the file is "
	       "on disk\n"
	       "  --nocache                   transfers leave the page "
	       "cache as they\n"
	       "                              found it\n"
	       "  --check[=text|json]         print what this host gives the "
	       "server\n"
	       "                              (io_uring, Landlock, pipes, "
	       "the start\n"
	       "                              directory's file system) and "
	       "exit\n"
	       "  --help                      show this help\n"
	       "  --version                   show the version\n",
	       QUEUE_DEPTH_MAX, QUEUE_DEPTH_DEFAULT, WRITE_MERGE_MAX,
	       WRITE_MERGE_DEFAULT);
	exit(0);
}

static void __attribute__((noreturn)) fatal_no_message(void)
{
	exit(EXIT_FATAL);
}

/* An octal number from 0 to max: -u with strtol's rules, as OpenSSH
 * takes it; -m and -M are strict (digits 0-7 only, no sign or spaces). */
static int parse_octal(const char *arg, long max, int strict, unsigned *value)
{
	char *end;
	long n;

	if (strict && (*arg == '\0' || strspn(arg, "01234567") != strlen(arg)))
		return -1;
	errno = 0;
	n = strtol(arg, &end, 8);
	if (end == arg || *end != '\0' || n < 0 || n > max ||
	    (n == 0 && errno != 0) || errno == ERANGE)
		return -1;
	*value = (unsigned)n;
	return 0;
}

static int parse_backend(const char *arg, enum backend_choice *choice)
{
	if (strcmp(arg, "auto") == 0)
		*choice = BACKEND_AUTO;
	else if (strcmp(arg, "uring") == 0)
		*choice = BACKEND_URING;
	else if (strcmp(arg, "plain") == 0)
		*choice = BACKEND_PLAIN;
	else
		return -1;
	return 0;
}

/* One of two words: 0 for the first, 1 for the second; anything else is
 * a usage error (exit 1). */
static int parse_either(const char *arg, const char *what, const char *first,
                        const char *second)
{
	if (strcmp(arg, first) == 0)
		return 0;
	if (strcmp(arg, second) == 0)
		return 1;
	fprintf(stderr, "Invalid %s \"%s\": use %s or %s\n", what, arg, first,
	        second);
	exit(1);
}

/* A decimal number in [min, max]. */
static int parse_number(const char *arg, unsigned long min, unsigned long max,
                        unsigned *value)
{
	char *end;
	unsigned long n;

	/* strtoul would quietly turn "-1" into a huge number. */
	if (*arg < '0' || *arg > '9')
		return -1;
	errno = 0;
	n = strtoul(arg, &end, 10);
	if (*end != '\0' || errno != 0 || n < min || n > max)
		return -1;
	*value = (unsigned)n;
	return 0;
}

static void set_defaults(struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->log_level = LOG_LEVEL_ERROR;
	o->log_facility = LOG_AUTH;
	o->backend = BACKEND_AUTO;
	o->queue_depth = QUEUE_DEPTH_DEFAULT;
	o->write_merge = WRITE_MERGE_DEFAULT;
	o->file_mode = -1;
	o->dir_mode = -1;
}

/*
 * Handle one short option.  Returns OPTIONS_RUN to go on, OPTIONS_EXIT_OK
 * or OPTIONS_QUERY_REQUESTS when the program should stop with status 0
 * (after printing what -Q asked for), or -1 after -c, which ends
 * option parsing.
 */
static int apply_short_option(struct options *o, int ch, const char *arg,
                              const char *prog, const char *user,
                              const char *home, unsigned long uid)
{
	unsigned mode;

	switch (ch) {
	case 'Q':
		if (strcasecmp(arg, "requests") != 0) {
			fprintf(stderr, "Invalid query type\n");
			exit(1);
		}
		/* main prints the table: options know no requests. */
		return OPTIONS_QUERY_REQUESTS;
	case 'R':
		o->readonly = 1;
		break;
	case 'c':
		/* "sftp-server -c command": run as a login shell. */
		return -1;
	case 'e':
		o->log_stderr = 1;
		break;
	case 'l':
		o->log_level = log_level_from_name(arg);
		if (o->log_level == LOG_LEVEL_NOT_SET)
			error("Invalid log level \"%s\"", arg);
		break;
	case 'f':
		o->log_facility = log_facility_from_name(arg);
		if (o->log_facility == -1)
			error("Invalid log facility \"%s\"", arg);
		break;
	case 'd':
		free(owned_start_dir);
		owned_start_dir = expand_start_dir(arg, user, home, uid);
		if (owned_start_dir == NULL)
			fatal_no_message(); /* expand_start_dir said why */
		o->start_dir = owned_start_dir;
		break;
	case 'p':
		if (o->allowed != NULL)
			fatal_exit(EXIT_FATAL,
			           "Permitted requests already set");
		o->allowed = owned_allowed = strdup(arg);
		if (o->allowed == NULL)
			fatal_exit(EXIT_FATAL, "out of memory");
		break;
	case 'P':
		if (o->denied != NULL)
			fatal_exit(EXIT_FATAL, "Refused requests already set");
		o->denied = owned_denied = strdup(arg);
		if (o->denied == NULL)
			fatal_exit(EXIT_FATAL, "out of memory");
		break;
	case 'u':
		if (parse_octal(arg, 0777, 0, &o->umask_value) != 0)
			fatal_exit(EXIT_FATAL, "Invalid umask \"%s\"", arg);
		o->umask_set = 1;
		umask((mode_t)o->umask_value);
		break;
	case 'm':
	case 'M':
		if (parse_octal(arg, ch == 'm' ? 0777 : 07777, 1, &mode) != 0)
			fatal_exit(EXIT_FATAL,
			           "Invalid %s mode \"%s\": octal, at most %s",
			           ch == 'm' ? "file" : "directory", arg,
			           ch == 'm' ? "0777" : "07777");
		if (ch == 'm')
			o->file_mode = (int)mode;
		else
			o->dir_mode = (int)mode;
		break;
	case 'h':
	default: /* unknown letter or missing argument */
		usage_exit(prog);
	}
	return OPTIONS_RUN;
}

static int apply_long_option(struct options *o, int code, const char *arg,
                             const char *prog)
{
	switch (code) {
	case OPT_VERSION:
		printf("%s %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return OPTIONS_EXIT_OK;
	case OPT_HELP:
		help_exit(prog);
	case OPT_BACKEND:
		if (parse_backend(arg, &o->backend) != 0) {
			fprintf(stderr,
			        "Invalid backend \"%s\": use auto, uring or "
			        "plain\n",
			        arg);
			exit(1);
		}
		break;
	case OPT_QUEUE_DEPTH:
		if (parse_number(arg, 1, QUEUE_DEPTH_MAX, &o->queue_depth) !=
		    0) {
			fprintf(stderr,
			        "Invalid queue depth \"%s\": use 1 to %d\n",
			        arg, QUEUE_DEPTH_MAX);
			exit(1);
		}
		break;
	case OPT_NO_SPLICE:
	case OPT_NO_DIRECT_SPLICE:
		/* 0.1.0's: READ data is always copied now.  Accepted, so
		 * that a command line written for it still starts. */
		break;
	case OPT_CONFINE:
		if (arg != NULL && *arg == '\0') {
			fprintf(stderr, "Invalid confinement directory \"\"\n");
			exit(1);
		}
		o->confine = 1;
		o->confine_dir = arg;
		break;
	case OPT_XFERLOG:
		free(owned_xferlog);
		o->xferlog_path = owned_xferlog = strdup(arg);
		break;
	case OPT_XFERLOG_FORMAT:
		o->xferlog_format =
		    XFERLOG_XFERLOG +
		    parse_either(arg, "xferlog format", "xferlog", "json");
		break;
	case OPT_ATOMIC_UPLOADS:
		o->atomic_uploads = 1;
		break;
	case OPT_FSYNC_ON_CLOSE:
		o->fsync_on_close = 1;
		break;
	case OPT_NOCACHE:
		o->nocache = 1;
		break;
	case OPT_CHECK:
		o->check = arg == NULL
		               ? CHECK_TEXT
		               : CHECK_TEXT + parse_either(arg, "check format",
		                                           "text", "json");
		break;
	case OPT_WRITE_MERGE:
		if (parse_number(arg, 0, WRITE_MERGE_MAX, &o->write_merge) !=
		    0) {
			fprintf(stderr,
			        "Invalid write merge limit \"%s\": use 0 to "
			        "%d\n",
			        arg, WRITE_MERGE_MAX);
			exit(1);
		}
		break;
	}
	return OPTIONS_RUN;
}

/*
 * Split a -c command at spaces and tabs into words[0..max-1] (pointers
 * into the copy *text, which the caller frees).  Returns the word count,
 * or -1 if there are more than max - 1 words or no memory.
 */
static int split_words(const char *command, char **text, char **words, int max)
{
	char *p, *save = NULL;
	int n = 0;

	if ((*text = strdup(command)) == NULL)
		return -1;
	for (p = strtok_r(*text, " \t", &save); p != NULL;
	     p = strtok_r(NULL, " \t", &save)) {
		if (n == max - 1)
			return -1;
		words[n++] = p;
	}
	words[n] = NULL;
	return n;
}

/*
 * The getopt loop over argv.  Returns OPTIONS_RUN, OPTIONS_EXIT_OK,
 * OPTIONS_QUERY_REQUESTS, or -1
 * when it stopped at -c; *command is then the argument after a separate
 * "-c", or NULL.
 */
static int parse_argv(struct options *o, int argc, char **argv,
                      const char *prog, const char *user, const char *home,
                      unsigned long uid, const char **command)
{
	int ch, result;

	*command = NULL;
	/* glibc starts over, resetting its internal state, at optind 0. */
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, short_options, long_options,
	                         NULL)) != -1) {
		if (ch >= OPT_VERSION)
			result = apply_long_option(o, ch, optarg, prog);
		else
			result = apply_short_option(o, ch, optarg, prog, user,
			                            home, uid);
		if (result > OPTIONS_RUN)
			return result;
		if (result < 0) {
			if (optind < argc &&
			    strcmp(argv[optind - 1], "-c") == 0)
				*command = argv[optind];
			return -1;
		}
	}
	return OPTIONS_RUN;
}

/*
 * "PROG -c COMMAND" is how sshd runs a command through a login shell, so
 * it reaches us when this program is the user's shell (the jail recipe).
 * OpenSSH's server ignores COMMAND.  We do too, unless its first word
 * names this program (the same file name as argv[0]): then COMMAND is a
 * Subsystem or ForceCommand line for us, and its other words are parsed
 * as our options.  No quoting: words are split at spaces and tabs, and a
 * -c among them ends parsing without looking further.
 */
static int parse_shell_command(struct options *o, const char *command,
                               const char *prog, const char *user,
                               const char *home, unsigned long uid)
{
	char *words[SHELL_COMMAND_WORDS_MAX], *text;
	const char *ignored;
	int n, result;

	n = split_words(command, &text, words, SHELL_COMMAND_WORDS_MAX);
	if (n < 1 || strcmp(base_name(words[0]), prog) != 0) {
		free(text);
		return OPTIONS_RUN;
	}
	result = parse_argv(o, n, words, prog, user, home, uid, &ignored);
	free(text);
	return result > OPTIONS_RUN ? result : OPTIONS_RUN;
}

int parse_options(struct options *o, int argc, char **argv, const char *user,
                  const char *home, unsigned long uid)
{
	const char *prog = base_name(argc > 0 ? argv[0] : NULL);
	const char *command;
	int result;

	set_defaults(o);
	free_owned_strings();

	/*
	 * As in OpenSSH, errors found while parsing go to syslog at the
	 * default level, even with -e: logging is only set up for real
	 * once all options are known.
	 */
	log_init(prog, o->log_level, o->log_facility, 0);

	result = parse_argv(o, argc, argv, prog, user, home, uid, &command);
	if (result < 0 && command != NULL)
		result = parse_shell_command(o, command, prog, user, home, uid);
	if (result > OPTIONS_RUN)
		return result;

	/*
	 * The real set-up: a bad -l ends the program here, a bad -f too
	 * unless -e made it irrelevant (log_init prints the message).
	 */
	log_init(prog, o->log_level, o->log_facility, o->log_stderr);
	return OPTIONS_RUN;
}

char *expand_tilde(const char *arg, const char *home, unsigned long uid)
{
	const char *rest, *dir;
	char *name = NULL, *out;
	size_t dir_len;
	int len;

	if (arg[0] != '~')
		return strdup(arg);

	rest = strchr(arg + 1, '/');
	if (rest == NULL)
		rest = arg + strlen(arg);
	if (rest == arg + 1 && home != NULL) {
		dir = home;
	} else if (rest == arg + 1) {
		struct passwd *pw = getpwuid((uid_t)uid);

		if (pw == NULL) {
			error("tilde_expand: No such uid %lu", uid);
			return NULL;
		}
		dir = pw->pw_dir;
	} else {
		struct passwd *pw;

		name = strndup(arg + 1, (size_t)(rest - (arg + 1)));
		if (name == NULL)
			return NULL;
		pw = getpwnam(name);
		if (pw == NULL) {
			error("tilde_expand: No such user %s", name);
			free(name);
			return NULL;
		}
		dir = pw->pw_dir;
	}
	rest += strspn(rest, "/");

	dir_len = strlen(dir);
	len =
	    asprintf(&out, "%s%s%s", dir,
	             dir_len == 0 || dir[dir_len - 1] != '/' ? "/" : "", rest);
	free(name);
	if (len < 0)
		return NULL;
	if (len >= PATH_MAX) {
		error("tilde_expand: Path too long");
		free(out);
		return NULL;
	}
	return out;
}

/* OpenSSH reports a bad escape in two lines, an error and a fatal. */
static char *percent_failure(char *partial)
{
	log_msg(LOG_LEVEL_FATAL, "percent_expand: failed");
	free(partial);
	return NULL;
}

/*
 * Replace %d, %u, %U and %% in src.  Any other escape, or a "%" at the
 * end, is fatal in OpenSSH; here it logs the same lines and gives NULL.
 */
static char *expand_percent(const char *src, const char *user, const char *home,
                            unsigned long uid)
{
	char uid_text[32];
	const char *p;
	char *out;
	size_t value_max, len = 0;

	snprintf(uid_text, sizeof(uid_text), "%lu", uid);
	if (user == NULL)
		user = "";
	if (home == NULL)
		home = "";

	/* Each source byte grows at most to the longest value. */
	value_max = strlen(home) + strlen(user) + sizeof(uid_text);
	out = malloc(strlen(src) * value_max + 1);
	if (out == NULL)
		return NULL;

	for (p = src; *p != '\0'; p++) {
		const char *value;
		size_t value_len;

		if (*p != '%') {
			out[len++] = *p;
			continue;
		}
		p++;
		if (*p == '%') {
			value = "%";
		} else if (*p == 'd') {
			value = home;
		} else if (*p == 'u') {
			value = user;
		} else if (*p == 'U') {
			value = uid_text;
		} else if (*p == '\0') {
			error("vdollar_percent_expand: invalid format");
			return percent_failure(out);
		} else {
			error("vdollar_percent_expand: unknown key %%%c", *p);
			return percent_failure(out);
		}
		value_len = strlen(value);
		memcpy(out + len, value, value_len);
		len += value_len;
	}
	out[len] = '\0';
	return out;
}

char *expand_start_dir(const char *arg, const char *user, const char *home,
                       unsigned long uid)
{
	char *tilded, *expanded;

	tilded = expand_tilde(arg, home, uid);
	if (tilded == NULL)
		return NULL;
	expanded = expand_percent(tilded, user, home, uid);
	free(tilded);
	return expanded;
}
