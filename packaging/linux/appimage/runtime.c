/*
 * haiku-desk's AppImage runtime (type 2 layout: this ELF, then a SquashFS image of the AppDir).
 *
 * Built by packaging/linux/build_appimage.sh from Debian's own libraries (libsquashfuse-dev,
 * libfuse3-dev and the compression libraries, all linked statically; only libc is shared), so
 * the build downloads nothing. It does what the AppImage project's runtime does for a user:
 *
 *   ./haiku-desk-<version>-x86_64.AppImage [args]   mount the image read-only with FUSE (in this
 *                                                   process), run AppRun from it, unmount when it
 *                                                   exits; if FUSE is not available (no
 *                                                   /dev/fuse or fusermount3: containers, chroots),
 *                                                   say so and extract-and-run instead
 *   --appimage-extract-and-run [args]               extract into $TMPDIR, run, delete (also with
 *                                                   APPIMAGE_EXTRACT_AND_RUN=1)
 *   --appimage-extract                              extract into ./squashfs-root
 *   --appimage-offset                               print where the SquashFS image starts
 *   --appimage-mount                                mount, print the mount point, wait for ^C
 *   --appimage-help | --appimage-version
 *
 * AppRun gets APPIMAGE (this file), APPDIR (the mounted or extracted folder), ARGV0 and OWD,
 * as with the AppImage project's runtime. Bytes 8-10 hold the type-2 magic "AI\x02"
 * (build_appimage.sh writes them).
 */
#define _GNU_SOURCE
#include <ll.h> /* squashfuse's low-level FUSE operations; includes its config.h (FUSE 3.2) */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUNTIME_VERSION "haiku-desk AppImage runtime 1 (squashfuse 0.1.105, libfuse 3)"

static pid_t child_pid = 0;

static void forward_signal(int sig) {
    if (child_pid > 0) kill(child_pid, sig);
}

static void die(const char *what) {
    fprintf(stderr, "AppImage runtime: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* The SquashFS image starts where the ELF ends: after its section header table. */
static off_t elf_size(const char *path) {
    Elf64_Ehdr header;
    int fd = open(path, O_RDONLY);
    if (fd < 0) die(path);
    if (read(fd, &header, sizeof header) != (ssize_t)sizeof header) die("reading the ELF header");
    close(fd);
    if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64) {
        fprintf(stderr, "AppImage runtime: %s is not a 64-bit ELF file\n", path);
        exit(1);
    }
    return (off_t)(header.e_shoff + (off_t)header.e_shentsize * header.e_shnum);
}

/* --- extraction ---------------------------------------------------------------------- */

static int write_file(sqfs *fs, sqfs_inode *inode, const char *path) {
    static char buffer[1 << 20];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, inode->base.mode & 07777);
    if (fd < 0) return -1;
    sqfs_off_t done = 0, total = (sqfs_off_t)inode->xtra.reg.file_size;
    while (done < total) {
        sqfs_off_t size = total - done < (sqfs_off_t)sizeof buffer ? total - done : (sqfs_off_t)sizeof buffer;
        if (sqfs_read_range(fs, inode, done, &size, buffer) != SQFS_OK || size <= 0) {
            close(fd);
            errno = EIO;
            return -1;
        }
        for (sqfs_off_t written = 0; written < size;) {
            ssize_t n = write(fd, buffer + written, (size_t)(size - written));
            if (n < 0) {
                close(fd);
                return -1;
            }
            written += n;
        }
        done += size;
    }
    fchmod(fd, inode->base.mode & 07777); /* the umask must not drop the execute bits */
    return close(fd);
}

/* Extract the whole image into `target` (created if missing). */
static void extract(const char *image, off_t offset, const char *target) {
    sqfs fs;
    sqfs_traverse trv;
    sqfs_err err;
    if (sqfs_open_image(&fs, image, (size_t)offset) != SQFS_OK) {
        fprintf(stderr, "AppImage runtime: %s holds no readable SquashFS image\n", image);
        exit(1);
    }
    if (mkdir(target, 0755) != 0 && errno != EEXIST) die(target);
    if (sqfs_traverse_open(&trv, &fs, sqfs_inode_root(&fs)) != SQFS_OK) die("opening the image");
    while (sqfs_traverse_next(&trv, &err)) {
        if (trv.dir_end) continue;
        sqfs_inode inode;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", target, trv.path);
        if (sqfs_inode_get(&fs, &inode, sqfs_dentry_inode(&trv.entry)) != SQFS_OK) die(trv.path);
        switch (inode.base.inode_type) {
        case SQUASHFS_DIR_TYPE:
        case SQUASHFS_LDIR_TYPE:
            if (mkdir(path, 0755) != 0 && errno != EEXIST) die(path);
            break;
        case SQUASHFS_REG_TYPE:
        case SQUASHFS_LREG_TYPE:
            if (write_file(&fs, &inode, path) != 0) die(path);
            break;
        case SQUASHFS_SYMLINK_TYPE:
        case SQUASHFS_LSYMLINK_TYPE: {
            char link[PATH_MAX];
            size_t size = sizeof link;
            if (sqfs_readlink(&fs, &inode, link, &size) != SQFS_OK) die(trv.path);
            unlink(path);
            if (symlink(link, path) != 0) die(path);
            break;
        }
        default: /* devices, fifos, sockets: an AppDir has none */
            break;
        }
    }
    if (err != SQFS_OK) {
        fprintf(stderr, "AppImage runtime: the image is damaged (error %d)\n", (int)err);
        exit(1);
    }
    sqfs_traverse_close(&trv);
    sqfs_destroy(&fs);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* --- running AppRun ------------------------------------------------------------------- */

static int run_apprun(const char *appdir, const char *image, int argc, char **argv, int first) {
    char apprun[PATH_MAX], cwd[PATH_MAX];
    snprintf(apprun, sizeof apprun, "%s/AppRun", appdir);
    setenv("APPIMAGE", image, 1);
    setenv("APPDIR", appdir, 1);
    setenv("ARGV0", argv[0], 1);
    if (getcwd(cwd, sizeof cwd)) setenv("OWD", cwd, 1);
    char **args = calloc((size_t)(argc - first + 2), sizeof *args);
    args[0] = apprun;
    for (int i = first; i < argc; i++) args[i - first + 1] = argv[i];
    child_pid = fork();
    if (child_pid < 0) die("fork");
    if (child_pid == 0) {
        execv(apprun, args);
        fprintf(stderr, "AppImage runtime: cannot run %s: %s\n", apprun, strerror(errno));
        _exit(127);
    }
    struct sigaction action = {0};
    action.sa_handler = forward_signal;
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGHUP, &action, NULL);
    int status = 0;
    while (waitpid(child_pid, &status, 0) < 0 && errno == EINTR) {
    }
    free(args);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

static int extract_and_run(const char *image, off_t offset, int argc, char **argv, int first) {
    const char *tmp = getenv("TMPDIR");
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/appimage_extracted_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(target)) die(target);
    extract(image, offset, target);
    int code = run_apprun(target, image, argc, argv, first);
    nftw(target, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return code;
}

/* --- mounting ------------------------------------------------------------------------- */

static void *fuse_loop(void *session) {
    fuse_session_loop((struct fuse_session *)session);
    return NULL;
}

/* Mount the image on a fresh folder; 0 and the channel on success, -1 when FUSE is missing. */
static int mount_image(const char *image, off_t offset, char *mountpoint, size_t size,
                       sqfs_ll_chan *channel, sqfs_ll **ll_out) {
    const char *base = strrchr(image, '/');
    base = base ? base + 1 : image;
    const char *tmp = getenv("TMPDIR");
    snprintf(mountpoint, size, "%s/.mount_%.6sXXXXXX", tmp && *tmp ? tmp : "/tmp", base);
    if (!mkdtemp(mountpoint)) die(mountpoint);
    sqfs_ll *ll = sqfs_ll_open(image, (size_t)offset);
    if (!ll) {
        fprintf(stderr, "AppImage runtime: %s holds no readable SquashFS image\n", image);
        exit(1);
    }
    struct fuse_lowlevel_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.getattr = sqfs_ll_op_getattr;
    ops.opendir = sqfs_ll_op_opendir;
    ops.releasedir = sqfs_ll_op_releasedir;
    ops.readdir = sqfs_ll_op_readdir;
    ops.lookup = sqfs_ll_op_lookup;
    ops.open = sqfs_ll_op_open;
    ops.create = sqfs_ll_op_create;
    ops.release = sqfs_ll_op_release;
    ops.read = sqfs_ll_op_read;
    ops.readlink = sqfs_ll_op_readlink;
    ops.listxattr = sqfs_ll_op_listxattr;
    ops.getxattr = sqfs_ll_op_getxattr;
    ops.forget = sqfs_ll_op_forget;
    ops.statfs = stfs_ll_op_statfs;
    char *fuse_argv[] = {"appimage-runtime", "-o", "ro,nodev,nosuid,fsname=haiku-desk.AppImage,subtype=appimage", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, fuse_argv);
    /* libfuse says why a mount fails (no /dev/fuse, no fusermount3) on stderr; keep it short */
    if (sqfs_ll_mount(channel, mountpoint, &args, &ops, sizeof ops, ll) != SQFS_OK) {
        rmdir(mountpoint);
        sqfs_ll_destroy(ll);
        free(ll);
        return -1;
    }
    *ll_out = ll;
    return 0;
}

static int mount_and_run(const char *image, off_t offset, int argc, char **argv, int first,
                         int wait_only) {
    char mountpoint[PATH_MAX];
    sqfs_ll_chan channel;
    sqfs_ll *ll = NULL;
    if (mount_image(image, offset, mountpoint, sizeof mountpoint, &channel, &ll) != 0) {
        fprintf(stderr,
                "AppImage runtime: FUSE is not available here (the fuse3 package gives it);\n"
                "extracting into a temporary folder instead (slower start, same program).\n");
        return extract_and_run(image, offset, argc, argv, first);
    }
    /* SIGINT/SIGTERM/SIGHUP go to AppRun (run_apprun), which ends, and then we unmount */
    pthread_t thread;
    if (pthread_create(&thread, NULL, fuse_loop, channel.session) != 0) die("starting the FUSE loop");
    int code;
    if (wait_only) {
        printf("%s\n", mountpoint);
        fflush(stdout);
        sigset_t set;
        int sig;
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        sigwait(&set, &sig);
        code = 0;
    } else {
        code = run_apprun(mountpoint, image, argc, argv, first);
    }
    fuse_session_exit(channel.session);
    fuse_session_unmount(channel.session); /* lazily: children still running keep their files */
    pthread_join(thread, NULL);
    fuse_session_destroy(channel.session);
    sqfs_ll_destroy(ll);
    free(ll);
    rmdir(mountpoint);
    return code;
}

int main(int argc, char **argv) {
    char image[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", image, sizeof image - 1);
    if (n < 0) die("/proc/self/exe");
    image[n] = '\0';
    off_t offset = elf_size(image);
    const char *option = argc > 1 ? argv[1] : "";

    if (strcmp(option, "--appimage-offset") == 0) {
        printf("%lld\n", (long long)offset);
        return 0;
    }
    if (strcmp(option, "--appimage-version") == 0) {
        printf("%s\n", RUNTIME_VERSION);
        return 0;
    }
    if (strcmp(option, "--appimage-help") == 0) {
        printf("%s\n\n"
               "  (no option)                 mount with FUSE and run the app\n"
               "  --appimage-extract-and-run  extract into $TMPDIR, run, delete\n"
               "  --appimage-extract          extract into ./squashfs-root\n"
               "  --appimage-mount            mount, print the mount point, wait for Ctrl-C\n"
               "  --appimage-offset           print the SquashFS image's offset\n"
               "  --appimage-version          this runtime's version\n",
               RUNTIME_VERSION);
        return 0;
    }
    if (strcmp(option, "--appimage-extract") == 0) {
        extract(image, offset, "squashfs-root");
        printf("squashfs-root\n");
        return 0;
    }
    if (strcmp(option, "--appimage-extract-and-run") == 0)
        return extract_and_run(image, offset, argc, argv, 2);
    const char *env = getenv("APPIMAGE_EXTRACT_AND_RUN");
    if (env && strcmp(env, "1") == 0) return extract_and_run(image, offset, argc, argv, 1);
    if (strcmp(option, "--appimage-mount") == 0) return mount_and_run(image, offset, argc, argv, 2, 1);
    if (strncmp(option, "--appimage-", 11) == 0) {
        fprintf(stderr, "AppImage runtime: unknown option %s (see --appimage-help)\n", option);
        return 2;
    }
    return mount_and_run(image, offset, argc, argv, 1, 0);
}
