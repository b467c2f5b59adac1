/* double-golden: reads IEEE 754 bit patterns (hex, one per line) and prints
 * each with C's printf("%.17g"), the format Redis uses for double replies
 * (addReplyDouble). Its output is resp/testdata/doubles.golden, checked by
 * resp/writer_test.go, so Sluice's AppendDouble is compared with the C
 * library rather than with Go's own formatting. Regenerate with:
 *
 *   cc -O2 -o /tmp/double-golden scripts/double-golden.c
 *   cut -d' ' -f1 resp/testdata/doubles.golden | /tmp/double-golden > resp/testdata/doubles.golden.new
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        uint64_t bits;
        double d;
        if (sscanf(line, "%" SCNx64, &bits) != 1) continue;
        memcpy(&d, &bits, sizeof(d));
        if (d != d) continue; /* NaN: Redis never replies with one */
        printf("%016" PRIx64 " %.17g\n", bits, d);
    }
    return 0;
}
