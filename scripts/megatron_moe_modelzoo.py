#!/usr/bin/env python3
"""NVIDIA's Megatron-MoE-ModelZoo (github.com/yanring/Megatron-MoE-ModelZoo) Qwen3-235B-A22B results as
validation records and launch entries: tests/data/validation/megatron_moe_modelzoo.json and
presets/launches/megatron-moe-modelzoo.json.

  python3 scripts/megatron_moe_modelzoo.py --mirror <a git dir of the ModelZoo> --out-dir .

The rows of best_practice/qwen3/readme.md (transcribed below, checked against the file) and what its
benchmark harness passes to Megatron-LM's pretrain_gpt.py for them: sbatch_benchmarking.sh (the
DISPATCHER, PR and A2A_OVERLAP switches), runtime_configs/benchmarking/runtime.conf (the model's
layer count for the pipeline split) and model_configs/benchmarking/Qwen3-235B-A22B.yaml (every
MODEL_ARGS key), all read with `git show <commit>:<path>`. The evidence names the file and key.
Not recorded: the Qwen3-Next-80B-A3B row (no meshplan preset of its gated-DeltaNet layers), the
long-context rows (model TFLOP/s only, under a FLOP count whose Megatron-LM commit the table does not
name: at 16k to 128k tokens the causal attention term, halved by Megatron-LM only since 8873b55d6a,
is most of it), GB200's MXFP8 rows (fine-grained activation offloading, not modelled).
"""
import argparse, collections, json, re, subprocess

C = 'e8650517d60d71ab73fc6b3b0388cac4ba435181'  # HEAD of the mirror read on 2026-12-07 (2026-05-16)
README = 'best_practice/qwen3/readme.md'
BASE = 'https://github.com/yanring/Megatron-MoE-ModelZoo/blob/%s/' % C

# The H100 table: Model | Dispatcher | System | Precision | #GPUs | SEQ LEN | TP | CP | EP | PP | EDP | ETP |
# VPP | DP | FSDP | MBS | GBS | GA | recompute | Step time (sec) | Per GPU TF | MFU | Mem | Notes | Code
H100 = [
    ('h100-256gpu-deepep-ep32', 'Cross-node EP strategy',
     '| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 32 | 8 | 1 | 1 | 4 | 16 | / | 1 | 2048 | 128 | norm, act | 19.7 | 245 |  |  |  | moe_dev(f3e6c5) |'),
    ('h100-256gpu-deepep-ep32-ep-overlap', 'Cross-node EP strategy',
     '| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 32 | 8 | 1 | 1 | 4 | 16 | / | 1 | 2048 | 128 | norm, act | 17.6 | 276 |  |  | +1f1b overlap | moe_dev(f3e6c5) |'),
    ('h100-256gpu-deepep-ep8-fsdp', 'Intra-node EP strategy',
     '| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 8 | 1 | 32 | 1 | 1 | 128 | On | 4 | 2048 | 4 | full | 17.6 | 276 |  |  | disable log para norm | main(1e057005) |'),
    ('h100-256gpu-alltoall-ep8-pp32', 'Intra-node EP strategy',
     '| 235B | A2A | H100 | BF16 | 256 | 4096 | 2 | 1 | 8 | 32 | 1 | 1 | 3 | 4 | / | 1 | 2048 | 512 | norm, act | 24.2 | 200 |  |  |  | main(1e057005) |'),
    ('h100-256gpu-deepep-tp4-ep8', 'Intra-node EP strategy',
     '| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 4 | 1 | 8 | 8 | 4 | 1 | 4 | 8 | / | 1 | 2048 | 256 |  | 29.0 | 167 |  |  |  | main(1e057005) |'),
]
# GB200/GB300 tables: GPU | SEQ_LEN | NNODES | Precision | TP | PP | VPP | CP | EP | MBS | GBS | TFLOPS | Notes,
# each with the command printed under it (the first command of its section).
GB = [
    ('gb200-256gpu-bf16', 'GB200', '| GB200 | 4096   | 64 | BF16  | 1 | 8 | 1  | 1 | 8  | 1 | 8192 | 750  | |',
     'Command (BF16):'),
    ('gb300-64gpu-mxfp8', 'GB300', '| GB300 | 4096 | 16 | MXFP8 | 1 | 1 | 1 | 1 | 64 | 1 | 8192 | 1055 | |', 'Command:'),
]

ap = argparse.ArgumentParser()
ap.add_argument('--mirror', required=True, help='git dir of yanring/Megatron-MoE-ModelZoo holding %s' % C)
ap.add_argument('--out-dir', default='.')
args = ap.parse_args()


def show(path):
    return subprocess.run(['git', '--git-dir', args.mirror, 'show', '%s:%s' % (C, path)], check=True,
                          capture_output=True, text=True).stdout


readme = show(README)
sbatch = show('sbatch_benchmarking.sh')
runtime = show('runtime_configs/benchmarking/runtime.conf')
yml = show('model_configs/benchmarking/Qwen3-235B-A22B.yaml')
for _, _, row in H100:
    assert row in readme, row
for _, _, row, _ in GB:
    assert row in readme, row


def model_arg(key):
    m = re.search(r'^\s*%s:\s*(\S+)' % re.escape(key), yml, re.M)
    return m.group(1) if m else None


# What the harness reads and passes, checked where the records rely on it.
assert re.search(r'\[Qwen3-235B-A22B\]="\s+2\s+8\s+32\s+1\s+4\s+1\s+256\s+96\s', runtime), 'runtime.conf NUM_LAYERS 96'
assert 'LAYERS_PER_VP=${LAYERS_PER_VP:-$((NUM_LAYERS / PP / VPP))}' in runtime
assert model_arg('--num-layers') == '94' and model_arg('--account-for-embedding-in-pipeline-split') == 'true'
assert model_arg('--account-for-loss-in-pipeline-split') == 'true'
assert model_arg('--use-distributed-optimizer') == 'true'
assert model_arg('--overlap-grad-reduce') == 'true' and model_arg('--overlap-param-gather') == 'true'
assert model_arg('--sequence-parallel') == 'true' and model_arg('--moe-grouped-gemm') == '${MOE_GROUPED_GEMM}'
assert model_arg('--cross-entropy-loss-fusion') == 'true' and model_arg('--cross-entropy-fusion-impl') == 'te'
assert model_arg('--moe-router-topk') == '8' and model_arg('--num-experts') == '128'
assert model_arg('--moe-ffn-hidden-size') == '1536' and model_arg('--hidden-size') == '4096'
assert 'TRAINING_PARAMS="${TRAINING_PARAMS} --tp-comm-overlap"' in sbatch  # PR=bf16
assert '--delay-wgrad-compute --overlap-moe-expert-parallel-comm' in sbatch  # A2A_OVERLAP=1
assert '--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep' in sbatch
assert '--fp8-recipe mxfp8 --fp8-format e4m3' in sbatch and '--fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag' in sbatch
assert '--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16' in sbatch
assert 'grad-reduce-in-bf16' not in yml + sbatch  # main gradients fp32, Megatron-LM's default

ARCH = {'name': 'Qwen3-235B-A22B', 'params_b': None, 'layers': 94, 'hidden': 4096, 'heads': 64, 'kv_heads': 4,
        'ffn_hidden': 12288, 'vocab': None, 'seq_len': 4096,
        'notes': "The harness's model_configs/benchmarking/Qwen3-235B-A22B.yaml gives the architecture (94 layers, "
                 "hidden 4096, 64 heads of 128, 4 query groups, 128 experts of 1,536, top 8); meshplan's preset of the "
                 "model has the same dimensions."}
HARNESS = ("sbatch_benchmarking.sh, runtime_configs/benchmarking/runtime.conf and "
           "model_configs/benchmarking/Qwen3-235B-A22B.yaml @%s" % C[:10])


def split(pp, vpp):
    """Layers per model chunk: runtime.conf counts 96 layers (the embedding and the loss among them,
    --account-for-embedding/loss-in-pipeline-split), LAYERS_PER_VP = 96 / PP / VPP."""
    chunks = pp * vpp
    if chunks == 1:
        return None, None
    n = 96 // chunks
    assert n * chunks == 96
    stage = [n - 1] + [n] * (chunks - 2) + [n - 1]
    assert sum(stage) == 94
    layout = 'E' + 't' * (n - 1) + '|' + ('t' * n + '|') * (chunks - 2) + 't' * (n - 1) + 'L'
    return stage, layout


records, runs = [], collections.OrderedDict()


def record(rid, row, table, gpu, count, prec, par, mbs, gbs, measured, notes, derived):
    rec = collections.OrderedDict()
    rec['id'] = rid
    rec['source'] = {
        'paper': "NVIDIA's Megatron-MoE-ModelZoo (github.com/yanring/Megatron-MoE-ModelZoo), best_practice/qwen3/readme.md",
        'repo': 'yanring/Megatron-MoE-ModelZoo', 'path': README, 'commit': C, 'url': BASE + README,
        'table': table, 'row': row.strip(),
        'read_from': 'a fetched mirror of github.com/yanring/Megatron-MoE-ModelZoo (git show %s:...), 2026-12-07' % C[:10]}
    rec['kind'] = 'table_row'
    rec['model'] = dict(ARCH)
    rec['hardware'] = {'gpu': gpu, 'count': count, 'peak_tflops_per_gpu_used_by_authors': None, 'precision': prec,
                       'notes': ("The section's experiment setup: NVLink 4th generation, InfiniBand 8 x 50 GB/s (DGX H100 class)"
                                 if gpu == 'H100' else "The section's setup: NVLink domain of 72 GPUs (%s NVL72)" % gpu)}
    rec['parallel'] = par
    rec['microbatch'] = mbs
    rec['global_batch'] = gbs
    rec['global_batch_tokens'] = gbs * 4096
    rec['measured'] = measured
    rec['derived_fields'] = derived
    rec['confidence'] = 'medium'
    rec['notes'] = notes
    records.append(rec)


for suf, table, row in H100:
    c = [x.strip() for x in row.strip().strip('|').split('|')]
    disp, gpus, tp, cp, ep, pp, edp, etp, vpp, dp, fsdp, mbs, gbs, ga, rc, step, tf, note, code = (
        c[1], int(c[4]), int(c[6]), int(c[7]), int(c[8]), int(c[9]), int(c[10]), int(c[11]), int(c[12]), int(c[13]),
        c[14], int(c[15]), int(c[16]), int(c[17]), c[18], float(c[19]), float(c[20]), c[23], c[24])
    assert dp == gpus // (tp * pp * cp) and ga == gbs // (mbs * dp) and edp == gpus // (ep * etp * pp)
    rid = 'megatron-moe-modelzoo-qwen3-235b-a22b-' + suf
    ev = ['the row: dispatcher %s, recompute %r, notes %r, code %s' % (disp, rc, note, code)]
    run = collections.OrderedDict()
    if rc == 'norm, act':
        run['recompute'] = 'selective'; run['recompute_modules'] = ['layernorm', 'moe_act']
    elif rc == 'full':
        run['recompute'] = 'full'; run['recompute_modules'] = []; run['recompute_num_layers'] = 0
    else:
        run['recompute'] = 'none'; run['recompute_modules'] = []
    run['cuda_graph'] = 'none'
    run['moe_dispatcher'] = 'alltoall' if disp == 'A2A' else 'flex/deepep'
    ev.append('DISPATCHER=%s: sbatch_benchmarking.sh passes %s' % (
        'alltoall' if disp == 'A2A' else 'deepep',
        '--moe-token-dispatcher-type alltoall' if disp == 'A2A' else '--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep'))
    overlap = note == '+1f1b overlap'
    run['moe_a2a_overlap'] = overlap
    if overlap:
        run['delay_wgrad'] = True
        ev.append('+1f1b overlap: A2A_OVERLAP=1, sbatch_benchmarking.sh passes --delay-wgrad-compute --overlap-moe-expert-parallel-comm')
    run['tp_comm_overlap'] = True
    ev.append('PR=bf16: sbatch_benchmarking.sh passes --tp-comm-overlap')
    run['overlap_grad_reduce'] = True
    run['overlap_param_gather'] = True
    run['grad_reduce_in_fp32'] = True
    ev.append('MODEL_ARGS --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather true; no --grad-reduce-in-bf16 (fp32 main gradients)')
    stage, layout = split(pp, vpp)
    if stage:
        run['vpp'] = vpp
        run['pp_layout'] = layout
        run['stage_layers'] = stage
        ev.append('runtime.conf NUM_LAYERS 96 (the embedding and the loss counted, --account-for-embedding-in-pipeline-split and '
                  '--account-for-loss-in-pipeline-split): LAYERS_PER_VP = 96 / %d / %d = %d, %d model chunks' % (pp, vpp, 96 // (pp * vpp), pp * vpp))
    run['recipe'] = '%s, the row\'s printed layout (TP/CP/EP/PP/VPP/MBS/GBS) and its dispatcher, recompute and notes columns' % HARNESS
    run['evidence'] = '; '.join(ev)
    run['notes'] = ('The row ran Megatron-LM %s, before the harness read here (2026-05): its settings are what this harness '
                    'passes for the printed columns; CUDA graphs none (the row names none; the README\'s later H100 command '
                    'captures moe_router and moe_preprocess); moe_router_force_load_balancing is not printed for these rows '
                    '(balanced routing, as meshplan costs it); DeepEP is costed as the all-to-all dispatcher (docs/validation.md)' % code)
    runs[rid] = run
    par = {'tp': tp, 'pp': pp, 'dp': dp, 'cp': cp, 'ep': ep, 'etp': etp, 'vpp': vpp if vpp > 1 else None,
           'model_parallel_size': None, 'zero_stage': 3 if fsdp == 'On' else None, 'fsdp': 'FULL_SHARD' if fsdp == 'On' else None,
           'recompute': None, 'sequence_parallel': None,
           'notes': 'TP/CP/EP/PP/EDP/ETP/VPP/DP/FSDP as printed (FSDP On: Megatron-FSDP, parameters, gradients and optimizer '
                    'state sharded over the data-parallel ranks, ZeRO-3); settings in presets/launches/megatron-moe-modelzoo.json'}
    tok = gbs * 4096 / (step * gpus)
    measured = {'tflops_per_gpu': tf, 'mfu_pct': None, 'hfu_pct': None, 'pct_of_peak': None, 'aggregate_pflops': None,
                'iteration_time_s': step, 'tokens_per_s': None, 'tokens_per_s_per_gpu': None, 'memory_gib': None,
                'training_days': None,
                'other': {'step_time_s_as_printed': c[19], 'per_gpu_tflops_as_printed': c[20],
                          'tokens_per_s_per_gpu_derived': round(tok, 1)}}
    record(rid, row, '### H100, %s' % table, 'H100', gpus, 'BF16', par, mbs, gbs, measured,
           'The README prints the step time (used here: GBS x 4,096 tokens / step / GPUs = %.1f tokens/s per GPU) and the '
           'model TFLOP/s per GPU of Megatron-LM %s.' % (tok, code), [])

for suf, gpu, row, cmd_head in GB:
    c = [x.strip() for x in row.strip().strip('|').split('|')]
    nodes, prec, tp, pp, vpp, cp, ep, mbs, gbs, tf = (int(c[2]), c[3], int(c[4]), int(c[5]), int(c[6]), int(c[7]),
                                                     int(c[8]), int(c[9]), int(c[10]), float(c[11]))
    gpus = nodes * 4
    dp = gpus // (tp * pp * cp)
    sec = readme[readme.index(row):]
    cmd = re.search(r'%s\s*```bash\s*(.*?)```' % re.escape(cmd_head), sec, re.S).group(1)
    env = dict(re.findall(r'(\w+)=(\S+)', cmd.split('bash ./sbatch_benchmarking.sh')[0]))
    extra = cmd.split('bash ./sbatch_benchmarking.sh')[1]
    assert int(env['TP']) == tp and int(env['PP']) == pp and int(env['VPP']) == vpp and int(env['EP']) == ep, suf
    assert int(env['NNODES']) == nodes and int(env['GBS']) == gbs and int(env.get('MBS', '1')) == mbs, suf
    assert env['PR'] == prec.lower() and env['DISPATCHER'] == 'hybridep', suf
    rid = 'megatron-moe-modelzoo-qwen3-235b-a22b-' + suf
    run = collections.OrderedDict()
    run['recompute'] = 'none'; run['recompute_modules'] = []
    scope = re.search(r'--cuda-graph-scope ([\w ]+?)(?: --|$)', extra.strip()).group(1).split()
    assert '--cuda-graph-impl transformer_engine' in extra
    run['cuda_graph'] = 'transformer_engine: ' + ', '.join(scope)
    run['moe_dispatcher'] = 'flex/hybridep'
    overlap = env['A2A_OVERLAP'] == '1'
    run['moe_a2a_overlap'] = overlap
    if overlap:
        run['delay_wgrad'] = True
    run['tp_comm_overlap'] = False
    run['overlap_grad_reduce'] = True
    run['overlap_param_gather'] = True
    run['grad_reduce_in_fp32'] = True
    mx = prec == 'MXFP8'
    run['fp8_param_gather'] = mx
    if mx:
        run['optimizer_states_dtype'] = 'bf16'
    stage, layout = split(pp, vpp)
    if pp > 1 and vpp == 1:
        n = 96 // pp
        stage = [n - 1] + [n] * (pp - 2) + [n - 1]; assert sum(stage) == 94
        layout = 'E' + 't' * (n - 1) + '|' + ('t' * n + '|') * (pp - 2) + 't' * (n - 1) + 'L'
    if stage:
        run['pp_layout'] = layout; run['stage_layers'] = stage
    run['segment_nodes'] = int(env['SEGMENT'])
    run['recipe'] = '%s, run as the section\'s printed command: %s' % (HARNESS, ' '.join(cmd.split()))
    ev = ['the command: %s' % ', '.join('%s=%s' % kv for kv in env.items()),
          'DISPATCHER=hybridep: --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --moe-hybridep-num-sms 32',
          '--cuda-graph-impl transformer_engine --cuda-graph-scope %s' % ' '.join(scope),
          'A2A_OVERLAP=%s%s' % (env['A2A_OVERLAP'], ': --delay-wgrad-compute --overlap-moe-expert-parallel-comm' if overlap else ''),
          'PR=%s%s' % (prec.lower(), (': --fp8-recipe mxfp8, --fp8-param-gather --reuse-grad-buf-for-mxfp8-param-ag, '
                                      '--use-precision-aware-optimizer with bf16 moments, --moe-router-padding-for-quantization')
                       if mx else ': --tp-comm-overlap (inactive at TP 1)'),
          'MODEL_ARGS --use-distributed-optimizer, --overlap-grad-reduce, --overlap-param-gather; fp32 main gradients',
          'SEGMENT=%s: sbatch --segment=%s' % (env['SEGMENT'], env['SEGMENT'])]
    if stage:
        ev.append('runtime.conf NUM_LAYERS 96 over PP %d: %d a stage, the first and last with the embedding and the loss' % (pp, 96 // pp))
    run['evidence'] = '; '.join(ev)
    run['notes'] = ('--moe-router-force-load-balancing (balanced routing, as meshplan costs it); HybridEP is costed as the '
                    'all-to-all dispatcher (docs/validation.md)' + ('; the router pads each expert\'s tokens for MXFP8 '
                                                                   '(not modelled); --reuse-grad-buf-for-mxfp8-param-ag (not modelled)' if mx else ''))
    runs[rid] = run
    par = {'tp': tp, 'pp': pp, 'dp': dp, 'cp': cp, 'ep': ep, 'etp': 1, 'vpp': vpp if vpp > 1 else None,
           'model_parallel_size': None, 'zero_stage': None, 'fsdp': None, 'recompute': None, 'sequence_parallel': None,
           'notes': 'TP/PP/VPP/CP/EP as printed; GPUs = NNODES x 4 (NVL72 compute trays); DP = GPUs / (TP x PP x CP); '
                    'settings in presets/launches/megatron-moe-modelzoo.json'}
    measured = {'tflops_per_gpu': tf, 'mfu_pct': None, 'hfu_pct': None, 'pct_of_peak': None, 'aggregate_pflops': None,
                'iteration_time_s': None, 'tokens_per_s': None, 'tokens_per_s_per_gpu': None, 'memory_gib': None,
                'training_days': None,
                'other': {'model_tflops_per_gpu_as_printed': c[11],
                          'tflops_definition': "Megatron-LM's logged model TFLOP/s per GPU (megatron/training/training.py "
                                               "num_floating_point_operations, the causal attention halved since 8873b55d6a): "
                                               "the stack megatron-lm-2026's flop_count megatron-2025"}}
    record(rid, row, '### %s (updated 2026-05-13, 020b813)' % gpu, gpu, gpus, prec, par, mbs, gbs, measured,
           'The README prints model TFLOP/s per GPU only; the run\'s Megatron-LM commit is not printed (the GB200/GB300 '
           'results were updated with the scripts on 2026-05-13).', ['parallel.dp', 'hardware.count'])

json.dump(records, open(args.out_dir + '/tests/data/validation/megatron_moe_modelzoo.json', 'w'), indent=1)
launch = collections.OrderedDict()
launch['source'] = ("NVIDIA's Megatron-MoE-ModelZoo at %s (github.com/yanring/Megatron-MoE-ModelZoo): the benchmark harness "
                    "(sbatch_benchmarking.sh, runtime_configs/benchmarking/runtime.conf, "
                    "model_configs/benchmarking/Qwen3-235B-A22B.yaml) that turns a row's printed settings into "
                    "pretrain_gpt.py arguments, read from a fetched mirror with git show" % C)
launch['notes'] = ("One entry per recorded row of best_practice/qwen3/readme.md (tests/data/validation/megatron_moe_modelzoo.json), "
                   "written by scripts/megatron_moe_modelzoo.py; each field from the harness's switch or MODEL_ARGS key its "
                   "evidence names, what they leave Megatron-LM's defaults (the stack megatron-lm-2026). The H100 rows ran "
                   "Megatron-LM commits of 2025 the table names (moe_dev f3e6c5, main 1e057005), older than this harness: "
                   "what the harness passes for their printed columns is assumed. DeepEP and HybridEP are said and costed as "
                   "the all-to-all dispatcher, as for the other recipes (docs/validation.md).")
launch['runs'] = runs
json.dump(launch, open(args.out_dir + '/presets/launches/megatron-moe-modelzoo.json', 'w'), indent=1)
print(len(records), 'records')
