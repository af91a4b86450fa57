/* secret.c - where secret files are and how they are opened (secret.h). */
#include "daemon/base/secret.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int pcd_secret_path(const char *file_key, const char *file, const char *cred_key, const char *cred,
                    const char *example, char *path, size_t pathlen, char *err, size_t errlen)
{
    if (*file && *cred) {
        snprintf(err, errlen, "give %s or %s, not both", file_key, cred_key);
        return -1;
    }
    if (!*cred) {
        snprintf(path, pathlen, "%s", file);
        return 0;
    }
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    if (!dir || !*dir) {
        snprintf(err, errlen, "%s is %s but $CREDENTIALS_DIRECTORY is not set: load it in the unit "
                 "(LoadCredential=%s:%s)", cred_key, cred, cred, example);
        return -1;
    }
    if (strchr(cred, '/')) {
        snprintf(err, errlen, "%s is a credential's name, not a path", cred_key);
        return -1;
    }
    if ((size_t)snprintf(path, pathlen, "%s/%s", dir, cred) >= pathlen) {
        snprintf(err, errlen, "%s: $CREDENTIALS_DIRECTORY/%s is too long a path", cred_key, cred);
        return -1;
    }
    return 0;
}

FILE *pcd_secret_open(const char *path, const char *what, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
        return NULL;
    }
    setvbuf(f, NULL, _IONBF, 0); /* no stdio buffer left holding the secret */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && (st.st_mode & 0007)) {
        snprintf(err, errlen, "%s %s are open to other users (mode %04o): chmod o-rwx it", what,
                 path, (unsigned)st.st_mode & 0777);
        fclose(f);
        return NULL;
    }
    return f;
}
