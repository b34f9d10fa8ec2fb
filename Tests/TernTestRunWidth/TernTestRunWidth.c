// Before Swift Testing reads its settings: at most eight tests at a time unless the run says
// otherwise. Started all at once, the suite's eleven hundred tests (each with its servers and
// threads) stalled the machine for ten seconds and more now and then, and tests waiting on
// that long timed out (five of eight unbounded runs of session 50, none of four bounded ones);
// eight at a time takes no longer.
#include <stdlib.h>

__attribute__((constructor)) static void ternBoundsTheTestRunsWidth(void) {
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", "8", 0);
}
