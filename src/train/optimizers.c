/* The optimizers the training graph implements, by their upstream config names (spec §6.4):
 * the one table that both `scaffold benchmark`'s up-front checks and sf_graph_create read, so that
 * implementing another optimizer (a row here plus its tasks) makes the checks accept it too. */
#include <stdio.h>
#include <string.h>

#include "scaffold/graph.h"

static const sf_optimizer_info optimizers[] = {
  {"ADAM", SF_OPT_ADAM, "torch.optim.Adam defaults: betas (0.9, 0.999), eps 1e-8, no weight decay"},
  {"SGD", SF_OPT_SGD, "torch.optim.SGD(lr): momentum 0, no weight decay"},
  /* upstream gives RMSprop for any name but ADAM and SGD; we take its CLI's spelling and torch's, and
   * refuse the rest (a typo would otherwise change the optimizer silently) */
  {"RMSProp", SF_OPT_RMSPROP, "torch.optim.RMSprop defaults: alpha 0.99, eps 1e-8, momentum 0, not centered"},
  {"RMSprop", SF_OPT_RMSPROP, "torch.optim.RMSprop defaults: alpha 0.99, eps 1e-8, momentum 0, not centered"},
};
#define NOPT ((int)(sizeof optimizers / sizeof optimizers[0]))

const sf_optimizer_info *sf_optimizer_find(const char *name)
{
  for (int i = 0; name && i < NOPT; i++)
    if (!strcmp(optimizers[i].name, name)) return &optimizers[i];
  return NULL;
}

void sf_optimizer_names(char *buf, size_t len)
{
  size_t k = 0;
  if (len) buf[0] = '\0';
  for (int i = 0; i < NOPT && k < len; i++)
    k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", optimizers[i].name);
}
