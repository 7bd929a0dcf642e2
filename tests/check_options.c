/* SPDX-License-Identifier: ISC
 * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */
/* Unit tests of the command line (OpenSSH's letters and exit codes, our
 * long options), -d expansion, the -P/-p lists, and the log output. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "handlers.h"
#include "log.h"
#include "options.h"
#include "xferlog.h"

#define TEST_USER "alice"
#define TEST_HOME "/home/alice"
#define TEST_UID 1234UL

/* Exit status a child reports when parse_options returned normally. */
#define RETURNED_BASE 100

static int parse(struct options *o, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	return parse_options(o, argc, argv, TEST_USER, TEST_HOME, TEST_UID);
}

/*
 * Run parse_options in a child with stdout and stderr discarded and
 * return its exit status; RETURNED_BASE + result if it did not exit.
 */
static int exit_status_of(char **argv)
{
	int status, null_fd;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct options o;

		null_fd = open("/dev/null", O_WRONLY);
		dup2(null_fd, STDOUT_FILENO);
		dup2(null_fd, STDERR_FILENO);
		_exit(RETURNED_BASE + parse(&o, argv));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* Read what fd holds from the start into a malloc'd string. */
static char *slurp_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *text = malloc(cap);
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, text + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (len + 1 == cap)
			text = realloc(text, cap *= 2);
	}
	text[len] = '\0';
	return text;
}

/* Parse with stdout captured; returns the result and sets *out. */
static int parse_capturing_stdout(struct options *o, char **argv, char **out)
{
	char path[] = "/tmp/check_options.XXXXXX";
	int fd = mkstemp(path), saved = dup(STDOUT_FILENO), result;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	fflush(stdout);
	dup2(fd, STDOUT_FILENO);
	result = parse(o, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	*out = slurp_fd(fd);
	close(fd);
	return result;
}

START_TEST(test_defaults)
{
	char *argv[] = {"/usr/libexec/sftp-server", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, argv), OPTIONS_RUN);
	ck_assert_int_eq(o.log_level, LOG_LEVEL_ERROR);
	ck_assert_int_eq(o.log_facility, LOG_AUTH);
	ck_assert_int_eq(o.log_stderr, 0);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_ptr_null(o.start_dir);
	ck_assert_ptr_null(o.denied);
	ck_assert_ptr_null(o.allowed);
	ck_assert_int_eq(o.umask_set, 0);
	ck_assert_int_eq(o.backend, BACKEND_AUTO);
	ck_assert_uint_eq(o.queue_depth, 64);
	ck_assert_uint_eq(o.write_merge, 256 * 1024);
	ck_assert_ptr_null(o.xferlog_path);
	ck_assert_int_eq(o.xferlog_format, XFERLOG_XFERLOG);
	ck_assert_int_eq(o.atomic_uploads, 0);
	ck_assert_int_eq(o.fsync_on_close, 0);
	ck_assert_int_eq(o.file_mode, -1);
	ck_assert_int_eq(o.dir_mode, -1);
}
END_TEST

/* --xferlog=FILE and --xferlog-format=xferlog|json. */
START_TEST(test_xferlog_options)
{
	char *json[] = {"s", "--xferlog=/var/log/x", "--xferlog-format=json",
	                NULL};
	char *plain[] = {"s", "--xferlog-format=xferlog", "--xferlog", "rel",
	                 NULL};
	char *bad[] = {"s", "--xferlog-format=csv", NULL};
	char *missing[] = {"s", "--xferlog", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, json), OPTIONS_RUN);
	ck_assert_str_eq(o.xferlog_path, "/var/log/x");
	ck_assert_int_eq(o.xferlog_format, XFERLOG_JSON);
	ck_assert_int_eq(parse(&o, plain), OPTIONS_RUN);
	ck_assert_str_eq(o.xferlog_path, "rel");
	ck_assert_int_eq(o.xferlog_format, XFERLOG_XFERLOG);
	ck_assert_int_eq(exit_status_of(bad), 1);
	ck_assert_int_eq(exit_status_of(missing), 1);
}
END_TEST

START_TEST(test_every_letter)
{
	char *argv[] = {"sftp-server", "-e", "-R",        "-l", "debug3", "-f",
	                "local5",      "-p", "open,read", "-P", "write",  "-d",
	                "/srv/%u",     "-u", "027",       NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, argv), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 1);
	ck_assert_int_eq(o.log_level, LOG_LEVEL_DEBUG3);
	ck_assert_int_eq(o.log_facility, LOG_LOCAL5);
	ck_assert_str_eq(o.allowed, "open,read");
	ck_assert_str_eq(o.denied, "write");
	ck_assert_str_eq(o.start_dir, "/srv/" TEST_USER);
	ck_assert_int_eq(o.umask_set, 1);
	ck_assert_uint_eq(o.umask_value, 027);
	/* -u takes effect at once. */
	ck_assert_uint_eq(umask(022), 027);
}
END_TEST

START_TEST(test_bundled_letters_and_case)
{
	char *argv[] = {"sftp-server", "-eRl", "Verbose", "-fAUTHPRIV", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, argv), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 1);
	ck_assert_int_eq(o.log_level, LOG_LEVEL_VERBOSE);
	ck_assert_int_eq(o.log_facility, LOG_AUTHPRIV);
}
END_TEST

START_TEST(test_level_and_facility_names)
{
	ck_assert_int_eq(log_level_from_name("QUIET"), LOG_LEVEL_QUIET);
	ck_assert_int_eq(log_level_from_name("fatal"), LOG_LEVEL_FATAL);
	ck_assert_int_eq(log_level_from_name("Error"), LOG_LEVEL_ERROR);
	ck_assert_int_eq(log_level_from_name("info"), LOG_LEVEL_INFO);
	ck_assert_int_eq(log_level_from_name("VERBOSE"), LOG_LEVEL_VERBOSE);
	ck_assert_int_eq(log_level_from_name("debug"), LOG_LEVEL_DEBUG1);
	ck_assert_int_eq(log_level_from_name("DEBUG1"), LOG_LEVEL_DEBUG1);
	ck_assert_int_eq(log_level_from_name("debug2"), LOG_LEVEL_DEBUG2);
	ck_assert_int_eq(log_level_from_name("Debug3"), LOG_LEVEL_DEBUG3);
	ck_assert_int_eq(log_level_from_name("debug4"), -1);
	ck_assert_int_eq(log_level_from_name(""), -1);
	ck_assert_int_eq(log_level_from_name(NULL), -1);

	ck_assert_int_eq(log_facility_from_name("daemon"), LOG_DAEMON);
	ck_assert_int_eq(log_facility_from_name("USER"), LOG_USER);
	ck_assert_int_eq(log_facility_from_name("Auth"), LOG_AUTH);
	ck_assert_int_eq(log_facility_from_name("authpriv"), LOG_AUTHPRIV);
	ck_assert_int_eq(log_facility_from_name("LOCAL0"), LOG_LOCAL0);
	ck_assert_int_eq(log_facility_from_name("local7"), LOG_LOCAL7);
	ck_assert_int_eq(log_facility_from_name("local8"), -1);
	ck_assert_int_eq(log_facility_from_name("kern"), -1);
}
END_TEST

START_TEST(test_bad_level_and_facility)
{
	char *bad_level[] = {"s", "-l", "loud", NULL};
	char *bad_facility[] = {"s", "-f", "kern", NULL};
	char *bad_facility_stderr[] = {"s", "-e", "-f", "kern", NULL};
	char *later_fixed[] = {"s", "-l", "loud", "-l", "info", NULL};

	ck_assert_int_eq(exit_status_of(bad_level), 1);
	ck_assert_int_eq(exit_status_of(bad_facility), 1);
	/* With -e the facility is never used, so it does not matter. */
	ck_assert_int_eq(exit_status_of(bad_facility_stderr),
	                 RETURNED_BASE + OPTIONS_RUN);
	/* Only the last -l counts. */
	ck_assert_int_eq(exit_status_of(later_fixed),
	                 RETURNED_BASE + OPTIONS_RUN);
}
END_TEST

START_TEST(test_umask_bounds)
{
	static const char *const good[] = {"0",  "0777", "777", "22",
	                                   "-0", "+7",   " 7"};
	static const char *const bad[] = {
	    "1000", "01000", "8",    "9",  "",
	    "-1",   "22x",   "0x1f", "7 ", "99999999999999999999"};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *argv[] = {"s", "-u", (char *)good[i], NULL};

		ck_assert_msg(exit_status_of(argv) ==
		                  RETURNED_BASE + OPTIONS_RUN,
		              "-u \"%s\" was refused", good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {"s", "-u", (char *)bad[i], NULL};

		ck_assert_msg(exit_status_of(argv) == 255,
		              "-u \"%s\" was not fatal", bad[i]);
	}
}
END_TEST

START_TEST(test_umask_value)
{
	char *argv[] = {"s", "-u", "0777", NULL};
	struct options o;

	umask(0);
	ck_assert_int_eq(parse(&o, argv), OPTIONS_RUN);
	ck_assert_uint_eq(o.umask_value, 0777);
	ck_assert_uint_eq(umask(022), 0777);
}
END_TEST

START_TEST(test_lists_given_twice)
{
	char *allow_twice[] = {"s", "-p", "open", "-p", "read", NULL};
	char *deny_twice[] = {"s", "-P", "open", "-P", "read", NULL};
	char *one_each[] = {"s", "-p", "open", "-P", "read", NULL};

	ck_assert_int_eq(exit_status_of(allow_twice), 255);
	ck_assert_int_eq(exit_status_of(deny_twice), 255);
	ck_assert_int_eq(exit_status_of(one_each), RETURNED_BASE + OPTIONS_RUN);
}
END_TEST

START_TEST(test_usage_exits)
{
	char *help[] = {"s", "-h", NULL};
	char *unknown[] = {"s", "-x", NULL};
	char *missing_arg[] = {"s", "-d", NULL};
	char *unknown_long[] = {"s", "--frobnicate", NULL};
	char *missing_long_arg[] = {"s", "--backend", NULL};

	ck_assert_int_eq(exit_status_of(help), 1);
	ck_assert_int_eq(exit_status_of(unknown), 1);
	ck_assert_int_eq(exit_status_of(missing_arg), 1);
	ck_assert_int_eq(exit_status_of(unknown_long), 1);
	ck_assert_int_eq(exit_status_of(missing_long_arg), 1);
}
END_TEST

START_TEST(test_usage_text)
{
	char path[] = "/tmp/check_options.XXXXXX";
	char *argv[] = {"/usr/lib/openssh/sftp-server", "-h", NULL};
	int fd = mkstemp(path), status;
	pid_t pid;
	char *text;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	pid = fork();
	if (pid == 0) {
		struct options o;

		dup2(fd, STDERR_FILENO);
		parse(&o, argv);
		_exit(RETURNED_BASE);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 1);
	text = slurp_fd(fd);
	ck_assert_str_eq(text, "usage: sftp-server [-ehR] [-d start_directory] "
	                       "[-f log_facility] [-l log_level]\n"
	                       "\t[-P denied_requests] [-p allowed_requests] "
	                       "[-u umask]\n"
	                       "       sftp-server -Q protocol_feature\n");
	free(text);
	close(fd);
}
END_TEST

START_TEST(test_help_and_version)
{
	char *help[] = {"s", "--help", NULL};
	char *version[] = {"s", "--version", NULL};
	struct options o;
	char *out;

	/* --help asked for it: exit 0, not 1 as for -h. */
	ck_assert_int_eq(exit_status_of(help), 0);

	ck_assert_int_eq(parse_capturing_stdout(&o, version, &out),
	                 OPTIONS_EXIT_OK);
	ck_assert_str_eq(out, PACKAGE_NAME " " PACKAGE_VERSION "\n");
	free(out);
}
END_TEST

START_TEST(test_help_text)
{
	char path[] = "/tmp/check_options.XXXXXX";
	char *argv[] = {"s", "--help", NULL};
	int fd = mkstemp(path), status;
	pid_t pid;
	char *text;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	pid = fork();
	if (pid == 0) {
		struct options o;

		dup2(fd, STDOUT_FILENO);
		parse(&o, argv);
		_exit(RETURNED_BASE);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	text = slurp_fd(fd);
	ck_assert_ptr_nonnull(strstr(text, "usage: s [-ehR]"));
	ck_assert_ptr_nonnull(strstr(text, "--queue-depth=N"));
	ck_assert_ptr_nonnull(strstr(text, "--backend="));
	ck_assert_ptr_nonnull(strstr(text, "--confine[=DIR]"));
	free(text);
	close(fd);
}
END_TEST

/* Each name must be on a line of its own, exactly once. */
static int count_lines_equal(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *line = text;
	int count = 0;

	while (*line != '\0') {
		const char *end = strchr(line, '\n');

		if (end == NULL)
			end = line + strlen(line);
		if ((size_t)(end - line) == n && memcmp(line, name, n) == 0)
			count++;
		line = *end != '\0' ? end + 1 : end;
	}
	return count;
}

/* What main prints for -Q requests. */
static char *names_printed(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	print_request_names(f);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(test_query_requests)
{
	static const char *const names[] = {
	    "open",
	    "close",
	    "read",
	    "write",
	    "lstat",
	    "fstat",
	    "setstat",
	    "fsetstat",
	    "opendir",
	    "readdir",
	    "remove",
	    "mkdir",
	    "rmdir",
	    "realpath",
	    "stat",
	    "rename",
	    "readlink",
	    "symlink",
	    "posix-rename",
	    "statvfs",
	    "fstatvfs",
	    "hardlink",
	    "fsync",
	    "lsetstat",
	    "limits",
	    "expand-path",
	    "copy-data",
	    "home-directory",
	    "users-groups-by-id",
	    "check-file-name",
	    "check-file-handle",
	    "check-file",
	    "copy-file",
	    "space-available",
	    "vendor-id",
	};
	char *lower[] = {"s", "-Q", "requests", NULL};
	char *upper[] = {"s", "-Q", "REQUESTS", NULL};
	char *other[] = {"s", "-Q", "cipher", NULL};
	struct options o;
	char *out, *out2;
	size_t i, lines = 0;

	ck_assert_int_eq(parse_capturing_stdout(&o, lower, &out),
	                 OPTIONS_QUERY_REQUESTS);
	/* Options know no requests: main prints them. */
	ck_assert_str_eq(out, "");
	free(out);
	out = names_printed();
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_msg(count_lines_equal(out, names[i]) == 1,
		              "\"%s\" not listed once", names[i]);
	for (i = 0; out[i] != '\0'; i++)
		lines += out[i] == '\n';
	ck_assert_uint_eq(lines, sizeof(names) / sizeof(names[0]));
	/* In OpenSSH's order: the first and last ones. */
	ck_assert(strncmp(out, "open\nclose\n", 11) == 0);
	ck_assert_ptr_nonnull(strstr(out, "home-directory\n"
	                                  "users-groups-by-id\n"));
	/* Ours after OpenSSH's. */
	ck_assert_ptr_nonnull(strstr(out, "users-groups-by-id\n"
	                                  "check-file-name\n"));

	ck_assert_int_eq(parse_capturing_stdout(&o, upper, &out2),
	                 OPTIONS_QUERY_REQUESTS);
	ck_assert_str_eq(out2, "");
	free(out);
	free(out2);

	ck_assert_int_eq(exit_status_of(other), 1);
}
END_TEST

START_TEST(test_c_stops_parsing)
{
	char *after_c[] = {"s", "-c", "-R", NULL};
	char *before_c[] = {"s", "-R", "-c", "-e", NULL};
	char *bundled[] = {"s", "-ce", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, after_c), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_int_eq(parse(&o, before_c), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 1);
	ck_assert_int_eq(o.log_stderr, 0);
	ck_assert_int_eq(parse(&o, bundled), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 0);
}
END_TEST

/* The login-shell form "PROG -c COMMAND": COMMAND's words are options
 * when its first word names this program, else ignored as by OpenSSH. */
START_TEST(test_c_command_options)
{
	char *ours[] = {"uring-sftp-server", "-c",
	                "/usr/libexec/uring-sftp-server  -R\t-l INFO -d ~/up",
	                NULL};
	char *openssh[] = {"uring-sftp-server", "-c",
	                   "/usr/lib/openssh/sftp-server -R", NULL};
	char *bundled[] = {"uring-sftp-server", "-ec", "uring-sftp-server -R",
	                   NULL};
	char *nested[] = {"uring-sftp-server", "-c",
	                  "uring-sftp-server -e -c uring-sftp-server -R", NULL};
	char *operand[] = {"uring-sftp-server", "-c",
	                   "uring-sftp-server -e 2>>/log -R", NULL};
	char *bad[] = {"uring-sftp-server", "-c", "uring-sftp-server -Z", NULL};
	char *query[] = {"uring-sftp-server", "-c",
	                 "uring-sftp-server -Q requests", NULL};
	struct options o;
	char *out;

	ck_assert_int_eq(parse(&o, ours), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 1);
	ck_assert_int_eq(o.log_level, LOG_LEVEL_INFO);
	ck_assert_str_eq(o.start_dir, TEST_HOME "/up");
	ck_assert_int_eq(parse(&o, openssh), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 0);
	/* Only a separate "-c" takes the next argument as the command. */
	ck_assert_int_eq(parse(&o, bundled), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_int_eq(parse(&o, nested), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_int_eq(parse(&o, operand), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_int_eq(exit_status_of(bad), 1);
	ck_assert_int_eq(parse_capturing_stdout(&o, query, &out),
	                 OPTIONS_QUERY_REQUESTS);
	free(out);
}
END_TEST

START_TEST(test_operand_stops_parsing)
{
	char *argv[] = {"s", "-e", "extra", "-R", NULL};
	struct options o;

	/* Like BSD getopt: no reordering, "-R" after an operand is not
	 * an option. */
	ck_assert_int_eq(parse(&o, argv), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.readonly, 0);
}
END_TEST

START_TEST(test_reentrant)
{
	char *first[] = {"s", "-R", "-p", "open", "-d", "/x", NULL};
	char *second[] = {"s", "-p", "read", NULL};
	char *third[] = {"s", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, first), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 1);
	ck_assert_str_eq(o.allowed, "open");
	/* A second -p in a new parse is not "given twice". */
	ck_assert_int_eq(parse(&o, second), OPTIONS_RUN);
	ck_assert_int_eq(o.readonly, 0);
	ck_assert_str_eq(o.allowed, "read");
	ck_assert_ptr_null(o.start_dir);
	ck_assert_int_eq(parse(&o, third), OPTIONS_RUN);
	ck_assert_ptr_null(o.allowed);
}
END_TEST

START_TEST(test_backend_option)
{
	char *plain[] = {"s", "--backend=plain", NULL};
	char *uring[] = {"s", "--backend", "uring", NULL};
	char *autob[] = {"s", "--backend=auto", NULL};
	char *bad[] = {"s", "--backend=epoll", NULL};
	char *upper[] = {"s", "--backend=PLAIN", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, plain), OPTIONS_RUN);
	ck_assert_int_eq(o.backend, BACKEND_PLAIN);
	ck_assert_int_eq(parse(&o, uring), OPTIONS_RUN);
	ck_assert_int_eq(o.backend, BACKEND_URING);
	ck_assert_int_eq(parse(&o, autob), OPTIONS_RUN);
	ck_assert_int_eq(o.backend, BACKEND_AUTO);
	ck_assert_int_eq(exit_status_of(bad), 1);
	ck_assert_int_eq(exit_status_of(upper), 1);
}
END_TEST

START_TEST(test_confine_option)
{
	char *none[] = {"s", NULL};
	char *plain[] = {"s", "--confine", NULL};
	char *dir[] = {"s", "--confine=/srv/sftp/%u", NULL};
	char *empty[] = {"s", "--confine=", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, none), OPTIONS_RUN);
	ck_assert_int_eq(o.confine, 0);
	ck_assert_int_eq(parse(&o, plain), OPTIONS_RUN);
	ck_assert_int_eq(o.confine, 1);
	ck_assert_ptr_null(o.confine_dir);
	/* Expanded later, in main, with the -d rules. */
	ck_assert_int_eq(parse(&o, dir), OPTIONS_RUN);
	ck_assert_int_eq(o.confine, 1);
	ck_assert_str_eq(o.confine_dir, "/srv/sftp/%u");
	ck_assert_int_eq(exit_status_of(empty), 1);
}
END_TEST

/* -m, -M (OpenSSH's pull request #351's letters), --atomic-uploads and
 * --fsync-on-close. */
START_TEST(test_upload_options)
{
	char *all[] = {"s",
	               "-m",
	               "0640",
	               "-M",
	               "2750",
	               "--atomic-uploads",
	               "--fsync-on-close",
	               NULL};
	char *bundled[] = {"s", "-em600", "-M0", NULL};
	static const char *const good_m[] = {"0", "777", "0777", "0000640"};
	static const char *const bad_m[] = {"1000", "4755", "8",  "",    "-1",
	                                    "+7",   " 7",   "7 ", "0x7", "64a"};
	static const char *const bad_dm[] = {"10000", "17777", "9", "", "-0"};
	struct options o;
	size_t i;

	ck_assert_int_eq(parse(&o, all), OPTIONS_RUN);
	ck_assert_int_eq(o.file_mode, 0640);
	ck_assert_int_eq(o.dir_mode, 02750);
	ck_assert_int_eq(o.atomic_uploads, 1);
	ck_assert_int_eq(o.fsync_on_close, 1);
	ck_assert_int_eq(parse(&o, bundled), OPTIONS_RUN);
	ck_assert_int_eq(o.log_stderr, 1);
	ck_assert_int_eq(o.file_mode, 0600);
	ck_assert_int_eq(o.dir_mode, 0);
	ck_assert_int_eq(o.atomic_uploads, 0);
	for (i = 0; i < sizeof(good_m) / sizeof(good_m[0]); i++) {
		char *argv[] = {"s", "-m", (char *)good_m[i], NULL};

		ck_assert_msg(exit_status_of(argv) ==
		                  RETURNED_BASE + OPTIONS_RUN,
		              "-m \"%s\" was refused", good_m[i]);
	}
	/* As an invalid -u: fatal, 255; strictly octal digits. */
	for (i = 0; i < sizeof(bad_m) / sizeof(bad_m[0]); i++) {
		char *argv[] = {"s", "-m", (char *)bad_m[i], NULL};

		ck_assert_msg(exit_status_of(argv) == 255,
		              "-m \"%s\" was not fatal", bad_m[i]);
	}
	for (i = 0; i < sizeof(bad_dm) / sizeof(bad_dm[0]); i++) {
		char *argv[] = {"s", "-M", (char *)bad_dm[i], NULL};

		ck_assert_msg(exit_status_of(argv) == 255,
		              "-M \"%s\" was not fatal", bad_dm[i]);
	}
}
END_TEST

START_TEST(test_queue_depth_bounds)
{
	static const char *const bad[] = {
	    "0",  "1025", "-1",
	    "",   "abc",  "12x",
	    " 5", "+5",   "99999999999999999999999"};
	char *low[] = {"s", "--queue-depth=1", NULL};
	char *high[] = {"s", "--queue-depth", "1024", NULL};
	struct options o;
	size_t i;

	ck_assert_int_eq(parse(&o, low), OPTIONS_RUN);
	ck_assert_uint_eq(o.queue_depth, 1);
	ck_assert_int_eq(parse(&o, high), OPTIONS_RUN);
	ck_assert_uint_eq(o.queue_depth, 1024);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char arg[64];
		char *argv[] = {"s", arg, NULL};

		snprintf(arg, sizeof(arg), "--queue-depth=%s", bad[i]);
		ck_assert_msg(exit_status_of(argv) == 1,
		              "--queue-depth=%s accepted", bad[i]);
	}
}
END_TEST

START_TEST(test_write_merge_and_splice)
{
	static const char *const bad[] = {"-1", "4194305", "", "1k", "x"};
	/* 0.1.0's splice switches still start the server. */
	char *off[] = {"s", "--write-merge=0", "--no-splice",
	               "--no-direct-splice", NULL};
	char *high[] = {"s", "--write-merge", "4194304", NULL};
	struct options o;
	size_t i;

	ck_assert_int_eq(parse(&o, off), OPTIONS_RUN);
	ck_assert_uint_eq(o.write_merge, 0);
	ck_assert_int_eq(parse(&o, high), OPTIONS_RUN);
	ck_assert_uint_eq(o.write_merge, 4194304);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char arg[64];
		char *argv[] = {"s", arg, NULL};

		snprintf(arg, sizeof(arg), "--write-merge=%s", bad[i]);
		ck_assert_msg(exit_status_of(argv) == 1,
		              "--write-merge=%s accepted", bad[i]);
	}
}
END_TEST

/* Expansion failures are logged; keep the test output clean. */
static void quiet_log(void)
{
	log_init("test", LOG_LEVEL_QUIET, LOG_AUTH, 1);
}

static void assert_expands(const char *arg, const char *home,
                           const char *expect)
{
	char *got = expand_start_dir(arg, TEST_USER, home, TEST_UID);

	ck_assert_msg(got != NULL, "\"%s\" failed", arg);
	ck_assert_str_eq(got, expect);
	free(got);
}

static void assert_expansion_fails(const char *arg)
{
	char *got = expand_start_dir(arg, TEST_USER, TEST_HOME, TEST_UID);

	ck_assert_msg(got == NULL, "\"%s\" gave \"%s\"", arg, got);
}

START_TEST(test_expand_percent)
{
	assert_expands("/srv/sftp", TEST_HOME, "/srv/sftp");
	assert_expands("%d", TEST_HOME, TEST_HOME);
	assert_expands("%d/in", TEST_HOME, TEST_HOME "/in");
	assert_expands("/srv/%u/%U", TEST_HOME, "/srv/" TEST_USER "/1234");
	assert_expands("100%%", TEST_HOME, "100%");
	assert_expands("%%d", TEST_HOME, "%d");
	assert_expands("%u%u%d", TEST_HOME, TEST_USER TEST_USER TEST_HOME);
	assert_expands("", TEST_HOME, "");

	/* Unknown escapes and a lone "%" at the end are fatal. */
	assert_expansion_fails("%x");
	assert_expansion_fails("/srv/%h");
	assert_expansion_fails("abc%");
	assert_expansion_fails("%D");
}
END_TEST

START_TEST(test_expand_tilde)
{
	struct passwd *root = getpwnam("root");
	char expect[4096];

	/* Home gets a trailing slash; leading slashes of the rest go. */
	assert_expands("~", TEST_HOME, TEST_HOME "/");
	assert_expands("~/", TEST_HOME, TEST_HOME "/");
	assert_expands("~/x", TEST_HOME, TEST_HOME "/x");
	assert_expands("~//x/", TEST_HOME, TEST_HOME "/x/");
	assert_expands("~/%u", TEST_HOME, TEST_HOME "/" TEST_USER);
	assert_expands("~", "/", "/");
	assert_expands("~/x", "/home/slash/", "/home/slash/x");
	/* Only a leading tilde is special. */
	assert_expands("/x/~", TEST_HOME, "/x/~");

	if (root != NULL) {
		const char *dir = root->pw_dir;
		const char *sep = dir[strlen(dir) - 1] == '/' ? "" : "/";

		snprintf(expect, sizeof(expect), "%s%s", dir, sep);
		assert_expands("~root", TEST_HOME, expect);
		snprintf(expect, sizeof(expect), "%s%ssub/" TEST_USER, dir,
		         sep);
		assert_expands("~root/sub/%u", TEST_HOME, expect);
	}
	assert_expansion_fails("~no-such-user-here");
	assert_expansion_fails("~no-such-user-here/x");
}
END_TEST

START_TEST(test_start_dir_option)
{
	char *good[] = {"s", "-d", "%d/upload", NULL};
	char *bad_key[] = {"s", "-d", "/srv/%q", NULL};
	char *bad_user[] = {"s", "-d", "~no-such-user-here", NULL};
	struct options o;

	ck_assert_int_eq(parse(&o, good), OPTIONS_RUN);
	ck_assert_str_eq(o.start_dir, TEST_HOME "/upload");
	ck_assert_int_eq(exit_status_of(bad_key), 255);
	ck_assert_int_eq(exit_status_of(bad_user), 255);
}
END_TEST

/* Log output, read back through a pipe that stands in for stderr. */
static int log_pipe[2];

static void setup_log_pipe(void)
{
	ck_assert_int_eq(pipe(log_pipe), 0);
	fcntl(log_pipe[0], F_SETFL, O_NONBLOCK);
	log_set_stderr_fd(log_pipe[1]);
}

static void teardown_log_pipe(void)
{
	log_set_stderr_fd(STDERR_FILENO);
	close(log_pipe[0]);
	close(log_pipe[1]);
}

static char *read_log(void)
{
	static char text[8192];
	ssize_t n = read(log_pipe[0], text, sizeof(text) - 1);

	text[n > 0 ? n : 0] = '\0';
	return text;
}

START_TEST(test_log_stderr_format)
{
	log_init("test", LOG_LEVEL_INFO, LOG_AUTH, 1);
	/* The example from the reference: UTF-8, a tab, a backslash. */
	logit("open \"%s\" flags %s mode 0%o", "/tmp/caf\303\251\tx\\y", "READ",
	      0666);
	ck_assert_str_eq(read_log(), "open \"/tmp/caf\\303\\251\tx\\\\y\" "
	                             "flags READ mode 0666\r\n");

	/* Control characters other than tab and newline are escaped. */
	logit("a\001b\033c\177d\ne");
	ck_assert_str_eq(read_log(), "a\\001b\\033c\\177d\ne\r\n");
}
END_TEST

START_TEST(test_log_levels_and_prefixes)
{
	log_init("test", LOG_LEVEL_INFO, LOG_AUTH, 1);
	ck_assert_int_eq(log_get_level(), LOG_LEVEL_INFO);
	verbose("hidden");
	debug("hidden");
	ck_assert_str_eq(read_log(), "");
	/* No "error: " on stderr, only in syslog. */
	error("bad %d", 1);
	ck_assert_str_eq(read_log(), "bad 1\r\n");

	log_init("test", LOG_LEVEL_DEBUG3, LOG_AUTH, 1);
	verbose("v");
	debug("one");
	debug2("two");
	debug3("three");
	ck_assert_str_eq(read_log(), "v\r\n"
	                             "debug1: one\r\n"
	                             "debug2: two\r\n"
	                             "debug3: three\r\n");

	log_init("test", LOG_LEVEL_QUIET, LOG_AUTH, 1);
	error("hidden");
	log_msg(LOG_LEVEL_FATAL, "hidden");
	ck_assert_str_eq(read_log(), "");
}
END_TEST

START_TEST(test_log_long_lines)
{
	char big[2000], expect[1100];
	int i;

	log_init("test", LOG_LEVEL_INFO, LOG_AUTH, 1);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	logit("%s", big);
	/* 1021 characters and CR LF fill the 1024-byte line buffer. */
	memset(expect, 'a', 1021);
	strcpy(expect + 1021, "\r\n");
	ck_assert_str_eq(read_log(), expect);

	/* Escapes are never cut in half: 255 whole ones fit. */
	memset(big, '\001', 600);
	big[600] = '\0';
	logit("%s", big);
	expect[0] = '\0';
	for (i = 0; i < 255; i++)
		strcat(expect, "\\001");
	strcat(expect, "\r\n");
	ck_assert_str_eq(read_log(), expect);
}
END_TEST

START_TEST(test_log_keeps_errno)
{
	log_init("test", LOG_LEVEL_INFO, LOG_AUTH, 1);
	errno = EXDEV;
	logit("x");
	ck_assert_int_eq(errno, EXDEV);
	read_log();
}
END_TEST

START_TEST(test_log_init_rejects_bad_level)
{
	int null_fd = open("/dev/null", O_WRONLY);

	dup2(null_fd, STDERR_FILENO);
	log_init("test", LOG_LEVEL_NOT_SET, LOG_AUTH, 1);
}
END_TEST

static int cleanup_fd = -1;
static int cleanup_calls;

static void cleanup_that_fails_again(int status)
{
	char c = 'H';

	cleanup_calls++;
	if (write(cleanup_fd, &c, 1) != 1)
		_exit(99);
	/* A fatal error inside the hook must not run the hook again. */
	fatal_exit(status, "again");
}

START_TEST(test_fatal_exit_runs_cleanup_once)
{
	int report[2], status;
	char buf[16];
	pid_t pid;
	ssize_t n;

	ck_assert_int_eq(pipe(report), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(report[0]);
		cleanup_fd = report[1];
		log_init("test", LOG_LEVEL_ERROR, LOG_AUTH, 1);
		log_set_cleanup(cleanup_that_fails_again);
		fatal_exit(42, "boom %d", 7);
	}
	close(report[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 42);
	n = read(report[0], buf, sizeof(buf));
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(buf[0], 'H');
	close(report[0]);
	/* Both fatal messages went to our stderr stand-in. */
	ck_assert_str_eq(read_log(), "boom 7\r\nagain\r\n");
	ck_assert_int_eq(cleanup_calls, 0); /* only the child ran it */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("options");
	TCase *opts = tcase_create("options");
	TCase *expand = tcase_create("expand");
	TCase *logs = tcase_create("log");
	SRunner *sr;
	int failed;

	tcase_add_test(opts, test_defaults);
	tcase_add_test(opts, test_xferlog_options);
	tcase_add_test(opts, test_every_letter);
	tcase_add_test(opts, test_bundled_letters_and_case);
	tcase_add_test(opts, test_level_and_facility_names);
	tcase_add_test(opts, test_bad_level_and_facility);
	tcase_add_test(opts, test_umask_bounds);
	tcase_add_test(opts, test_umask_value);
	tcase_add_test(opts, test_lists_given_twice);
	tcase_add_test(opts, test_usage_exits);
	tcase_add_test(opts, test_usage_text);
	tcase_add_test(opts, test_help_and_version);
	tcase_add_test(opts, test_help_text);
	tcase_add_test(opts, test_query_requests);
	tcase_add_test(opts, test_c_stops_parsing);
	tcase_add_test(opts, test_c_command_options);
	tcase_add_test(opts, test_operand_stops_parsing);
	tcase_add_test(opts, test_reentrant);
	tcase_add_test(opts, test_backend_option);
	tcase_add_test(opts, test_confine_option);
	tcase_add_test(opts, test_upload_options);
	tcase_add_test(opts, test_queue_depth_bounds);
	tcase_add_test(opts, test_write_merge_and_splice);
	suite_add_tcase(s, opts);

	tcase_add_checked_fixture(expand, quiet_log, NULL);
	tcase_add_test(expand, test_expand_percent);
	tcase_add_test(expand, test_expand_tilde);
	tcase_add_test(expand, test_start_dir_option);
	suite_add_tcase(s, expand);

	tcase_add_checked_fixture(logs, setup_log_pipe, teardown_log_pipe);
	tcase_add_test(logs, test_log_stderr_format);
	tcase_add_test(logs, test_log_levels_and_prefixes);
	tcase_add_test(logs, test_log_long_lines);
	tcase_add_test(logs, test_log_keeps_errno);
	tcase_add_exit_test(logs, test_log_init_rejects_bad_level, 1);
	tcase_add_test(logs, test_fatal_exit_runs_cleanup_once);
	suite_add_tcase(s, logs);

	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
