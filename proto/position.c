/* position.c - a write's place in its model's log, as the wire carries it
 * (proto.h, "Positions"): the "position" of a write's answer, which a
 * client passes back opaquely as predict's {"after": POSITION}.  With the
 * shared log it is the Redis stream entry ID of the entry that carried the
 * write, "MS-SEQ"; with one daemon and its journal, the journal's LSN,
 * "LSN".  Both are strings of decimal digits, so one type for clients;
 * which of the two a daemon takes is its own business (the daemon checks). */
#include "proto/proto.h"

/* The digits of v at the end of buf[0..PCP_POSITION_MAX): where they start. */
static char *digits(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

size_t pcp_position_format(char *buf, pcp_position p)
{
    char tmp[PCP_POSITION_MAX], *end = tmp + sizeof tmp, *s = digits(end, p.seq);
    if (p.entry) {
        *--s = '-';
        s = digits(s, p.ms);
    }
    size_t n = (size_t)(end - s);
    memcpy(buf, s, n);
    buf[n] = 0;
    return n;
}

/* A number of 1 to 20 digits that fits 64 bits; *used: its length. */
static bool number(const char *s, size_t len, uint64_t *v, size_t *used)
{
    size_t i = 0;
    uint64_t x = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
        i++;
    }
    *v = x;
    *used = i;
    return i > 0;
}

bool pcp_position_parse(const char *s, size_t len, pcp_position *p)
{
    uint64_t a, b;
    size_t n, m;
    if (!number(s, len, &a, &n))
        return false;
    if (n == len) {
        *p = (pcp_position){.entry = false, .seq = a};
        return true;
    }
    if (s[n] != '-' || !number(s + n + 1, len - n - 1, &b, &m) || n + 1 + m != len)
        return false;
    *p = (pcp_position){.entry = true, .ms = a, .seq = b};
    return true;
}
