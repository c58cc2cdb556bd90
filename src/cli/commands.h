// commands.h: the subcommand table (X-macro). One line per subcommand:
//   CMD(name, "one-line help")  ->  int cmd_<name>(int argc, char **argv, struct err *e)
// implemented in src/cli/<name>.c. argv[0] is the subcommand name. Return 0, or a negative
// enum err_code with e filled (ERR_USAGE -> exit status 2 with the command's usage).
// This file merges with git's union driver (.gitattributes): keep one CMD per line.
CMD(list, "models, tasks and attention modes")
CMD(tokenize, "text file -> token ids with a model's tokenizer.json")
CMD(download, "fetch a named model or task data into the cache (resumable, verified)")
CMD(cost, "emulated Ascend attention cost per mode (paper Table 10)")
CMD(inspect, "list the tensors of a safetensors checkpoint (validated)")
CMD(calibrate, "Smooth-QK statistics, gate decision and scales file")
CMD(attn, "run one attention kernel on a case file (goldens)")
CMD(run, "score tasks under several attention modes (the bare form --model M --task T is this)")
CMD(diff, "item-by-item comparison of two runs or modes: flips, hurts, helps, margins")
CMD(report, "re-render report.md, tables/*.csv and plots/*.svg of a run directory")
CMD(tables, "paper-style Tables 3/5/6/7 (modes x tasks x models) from finished runs")
CMD(prompts, "print a task's items and exact prompts as JSONL (no model)")
CMD(logits, "logits of one token sequence at every position (goldens)")
CMD(import_llama2c, "convert a llama2.c checkpoint + tokenizer to an HF Llama directory")
CMD(import_gguf, "convert a llama.cpp GGUF model (dequantized) + its tokenizer to an HF directory")
CMD(make_model, "deterministic synthetic checkpoint of any supported architecture")
CMD(merge, "join the run directories of run --shard K/N into one run (byte-identical samples)")
CMD(diagnose, "outlier diagnostics: Table 1/8 statistics, Jaccard stability, Figures 3/4/6")
CMD(trace, "attention diagnostics per mode: per-layer rel-L2/cosine vs f32, eps_bar histogram (Table 4, Fig. 8)")
