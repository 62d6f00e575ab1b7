/* Private to the runtime layer's FxT support (fxt.c, paje_sort.c). */
#ifndef SF_FXT_INTERNAL_H
#define SF_FXT_INTERNAL_H

#include <stddef.h>

/* Time-orders the Paje trace at path in place (as StarPU's starpu_paje_sort). Returns 0, or -1 with a
 * message in err. */
int sf_paje_sort(const char *path, char *err, size_t errlen);

#endif
