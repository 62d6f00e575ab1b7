/* Learning-rate schedule of the training loop (src/train/lr_schedule.c, spec §6.4). */
#ifndef SF_LR_SCHEDULE_H
#define SF_LR_SCHEDULE_H

/* torch.optim.lr_scheduler.CosineAnnealingWarmRestarts after `epochs_done` scheduler steps
 * (0 -> eta_max): T_cur counts epochs since the last restart, a period T_i starts at T_0 and is
 * multiplied by T_mult at each restart. */
double sf_cosine_warm_restart_lr(long epochs_done, double eta_max, double eta_min, long T_0, long T_mult);

#endif
