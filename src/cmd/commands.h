// One entry point per command; each lives in src/cmd_<name>.c and returns the exit status
// (0 ok, 1 runtime failure, 2 usage error). argv[0] is the command name.
#ifndef VITMAE_COMMANDS_H
#define VITMAE_COMMANDS_H
int cmd_train(int argc, char **argv);
int cmd_reconstruct(int argc, char **argv);
int cmd_attention(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_finetune(int argc, char **argv);
int cmd_classify(int argc, char **argv);
// The checks finetune --resume makes of a classifier's train_state JSON (info's "can resume"): 0, or
// -1 with err ("train_state: 'step' missing or out of range").
int finetune_state_check(const char *json, char *err, size_t errlen);
#endif
