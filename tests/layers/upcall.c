/* Test input of CTest layers_refuse_calls, linked into nothing: an object that the test hands to the
 * call check (cmake/LayerSymbols.cmake) as the runtime layer's library. It calls up into the codelets
 * through a declaration written by hand, which the include check cannot see; the call check must
 * refuse it. */
#include "scaffold/tensor.h"

void insert_task_zero(const void *o, sf_handle h); /* by hand: no scaffold/tasks.h */
void sf_layer_test_upcall(sf_handle h);

void sf_layer_test_upcall(sf_handle h) { insert_task_zero(0, h); }
