#!/usr/bin/env python3
"""Megatron-Bridge's performance skills (skills/nemo-mbridge-perf-*/) as validation records: the
matched experiments they print, each a recipe run with one setting changed.

  python3 scripts/megatron_bridge_skills.py --mirror <a git dir of github.com/NVIDIA-NeMo/Megatron-Bridge> --out-dir .

writes tests/data/validation/megatron_bridge_skills.json (step times) and
tests/data/memory/megatron_bridge_skills_memory.json (peak allocated memory, and the runs that ran out
of memory as outcomes). Two studies, read at 067f987df0 (main, 2026-08-22):

* Plain expert-parallel overlap on Qwen3-30B-A3B, 16 H100s
  (skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md, "HybridEP Production-Shape Benchmark",
  2026-07-25, the runs behind Megatron-Bridge #5094, 7ded17dae6): the recipe
  qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config (src/megatron/bridge/perf_recipes/qwen/h100/qwen3_moe.py)
  with overlap_moe_expert_parallel_comm off (its parent, 7ded17dae6^) and on (7ded17dae6), BF16,
  sequence 4096, TP1/PP1/CP1/EP16, MBS1/GBS1024, forced balanced routing, flex dispatch with HybridEP,
  Transformer Engine CUDA graphs of moe_router and moe_preprocess, delayed wgrad off. Three rows: off,
  on (iterations 5-20) and on again (iterations 41-50, "independent validation"), and that run's
  rank-0 peak allocated memory.
* Selective recomputation on Nemotron 3 Nano, 16 H100s (skills/nemo-mbridge-perf-activation-recompute/
  card.yaml measured_results, 2026-08-12, Bridge 600d069b82, Megatron-Core 24bad8e677): the native
  BF16 pretraining recipe (src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_nano.py
  nemotron_3_nano_pretrain_8gpu_h100_bf16_config at 600d069b82) on 16 GPUs, sequence 8192, MBS1/GBS16,
  TP1/PP1/CP1/EP8 (expert DP 2), HybridEP, grouped GEMM, Transformer Engine CUDA graphs of attention
  and Mamba, mock data, 12 steps; only recompute_modules changed. Two rows completed (step time and
  rank-0 peak after iteration 2), four ran out of memory (outcomes).

Not recorded: the study's Moonlight 16B rows (no model preset), its Llama 3 70B row (fine-tuning), and
the expert-parallel overlap skill's alltoall benchmark (Qwen3-30B-A3B fine-tuning, sequence not printed).

Memory: the skills print Megatron-Bridge's logged "(after N iterations) memory (GB)", bytes / 1.0e9
rounded to five significant digits (src/megatron/bridge/training/utils/train_utils.py report_memory,
line 1204 at 600d069b82 and 067f987df0), whether they call it GB or GiB (62.166, 64.653, 63.639: five
significant digits each); the records hold GiB, value x 1e9 / 2^30. Needs PyYAML.
"""
import collections, json, re, yaml

from megatron_bridge_common import GIB_PER_GB, git_show, mirror_args

AT = '067f987df03b8355b03192d88d70f1709fedf51a'  # main, 2026-08-22
URL = 'https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/%s/' % AT
OD = collections.OrderedDict

args = mirror_args(AT)


def show(path):
    return git_show(args.mirror, AT, path)


def record(rid, path, table, row, recipe, name, hf_id, seq, gpus, tp, pp, cp, ep, mbs, gbs, step_s, tflops,
           other, notes):
    return OD([
        ('id', rid),
        ('source', OD([
            ('paper', "Megatron-Bridge's performance skills (github.com/NVIDIA-NeMo/Megatron-Bridge skills/)"),
            ('repo', 'NVIDIA-NeMo/Megatron-Bridge'), ('path', path), ('commit', AT), ('url', URL + path),
            ('table', table), ('row', row), ('recipe', recipe),
            ('read_from', 'a fetched mirror (git show %s:%s), 2026-12-06' % (AT[:10], path)),
        ])),
        ('kind', 'table_row'),
        ('model', OD([
            ('name', name), ('params_b', None), ('layers', None), ('hidden', None), ('heads', None),
            ('kv_heads', None), ('ffn_hidden', None), ('vocab', None), ('seq_len', seq),
            ('notes', "Architecture not printed; the named model's public config (%s)." % hf_id),
        ])),
        ('hardware', OD([
            ('gpu', 'H100'), ('count', gpus), ('peak_tflops_per_gpu_used_by_authors', None), ('precision', 'BF16'),
            ('notes', 'The skill names the GPU only (H100 80GB).'),
        ])),
        ('parallel', OD([
            ('tp', tp), ('pp', pp), ('dp', gpus // (tp * pp * cp)), ('cp', cp), ('ep', ep), ('vpp', None),
            ('model_parallel_size', None), ('zero_stage', None), ('fsdp', None), ('recompute', None),
            ('sequence_parallel', None),
            ('notes', 'Layout as the skill prints it; DP = GPUs / (TP x PP x CP), derived. What else the recipe '
                      'sets: presets/launches/megatron-bridge-skills.json.'),
        ])),
        ('microbatch', mbs), ('global_batch', gbs), ('global_batch_tokens', None),
        ('measured', OD([
            ('tflops_per_gpu', tflops), ('mfu_pct', None), ('hfu_pct', None), ('pct_of_peak', None),
            ('aggregate_pflops', None), ('iteration_time_s', step_s), ('tokens_per_s', None),
            ('tokens_per_s_per_gpu', None), ('memory_gib', None), ('training_days', None), ('other', other),
        ])),
        ('derived_fields', ['parallel.dp']),
        ('confidence', 'high'),
        ('notes', notes),
    ])


def memory_record(r, measured):
    m = json.loads(json.dumps(r), object_pairs_hook=OD)
    m['measured'] = measured
    return m


records, memory = [], []

# 1. Plain EP overlap, Qwen3-30B-A3B on 16 H100s.
path = 'skills/nemo-mbridge-perf-expert-parallel-overlap/SKILL.md'
text = show(path)
sect = text.split('## HybridEP Production-Shape Benchmark')[1].split('\n## ')[0]
for key in ('Hardware: 16×H100', 'Precision: BF16', 'Sequence: 4096', 'Parallelism: TP1 / PP1 / CP1 / EP16',
            'Batch: MBS1 / GBS1024', 'Routing: force balance', 'Dispatcher: flex + HybridEP',
            'CUDA graph: Transformer Engine scopes moe_router + moe_preprocess', 'Delayed wgrad: disabled'):
    assert key in sect, key
rows = re.findall(r'^\| (overlap [^|]+?) \| iterations (\d+-\d+) \| ([\d.]+)s \| ([\d.]+) \|$', sect, re.M)
assert len(rows) == 3, rows
peak = float(re.search(r'rank-0 peak allocated memory was ([\d.]+) GiB', sect).group(1))
suffix = {'overlap off': 'ep-overlap-off', 'overlap on, search run': 'ep-overlap-on',
          'overlap on, independent validation': 'ep-overlap-on-validation'}
for case, window, step, tflops in rows:
    rid = 'megatron-bridge-skills-h100-qwen3-30b-a3b-16gpu-bf16-' + suffix[case]
    on = case != 'overlap off'
    r = record(rid, path, '"HybridEP Production-Shape Benchmark" (2026-07-25)',
               '| %s | iterations %s | %ss | %s |' % (case, window, step, tflops),
               'qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config (src/megatron/bridge/perf_recipes/qwen/h100/qwen3_moe.py) '
               'at %s' % ('7ded17dae62523b664dd3d8d2dbc632c844b1cef (Megatron-Bridge #5094, which turned the overlap on)'
                          if on else "7ded17dae62523b664dd3d8d2dbc632c844b1cef^ (the overlap off: #5094's parent)"),
               'Qwen3_30B_a3B', 'Qwen/Qwen3-30B-A3B', 4096, 16, 1, 1, 1, 16, 1, 1024, float(step), float(tflops),
               OD([('step_time_as_printed', step + 's'), ('model_tflops_per_gpu_as_printed', tflops),
                   ('window', 'iterations ' + window)]),
               'Megatron-Bridge performance skill expert-parallel-overlap: a controlled Qwen3-30B-A3B pretraining '
               'comparison, only overlap_moe_expert_parallel_comm changed (BF16, sequence 4096, TP1/PP1/CP1/EP16, '
               'MBS1/GBS1024, forced balanced routing, flex dispatch with HybridEP, Transformer Engine CUDA graphs of '
               'moe_router and moe_preprocess, delayed wgrad off). Case "%s", mean over iterations %s. The same '
               "recipe's later tuning (3a9559f012: HybridEP permute fusion, 32 SMs, 64-token combine chunks) ran "
               '20.147 s in the model verification card (megatron_bridge_cards.json).' % (case, window))
    records.append(r)
    if case == 'overlap on, independent validation':
        memory.append(memory_record(r, OD([
            ('peak_allocated_gib', round(peak * GIB_PER_GB, 3)), ('reserved_gib', None), ('peak_gib', None),
            ('metric', 'peak allocated, rank 0 (the skill: "rank-0 peak allocated memory was %s GiB"): '
                       "torch.cuda max_memory_allocated as Megatron-Bridge logs it" % peak),
            ('value_as_printed', str(peak)),
            ('unit_as_printed', 'GiB, read as 1e9 bytes: Megatron-Bridge logs bytes / 1.0e9 rounded to five '
                                'significant digits (training/utils/train_utils.py report_memory)'),
            ('which_rank', 'rank 0'), ('notes', None),
        ])))

# 2. Selective recomputation, Nemotron 3 Nano on 16 H100s.
path = 'skills/nemo-mbridge-perf-activation-recompute/card.yaml'
study = [s for s in yaml.safe_load(show(path))['measured_results'] if s['model'] == 'Nemotron 3 Nano'][0]
assert (study['gpus'], study['gpu'], study['precision'], study['seq_length'], study['mbs'], study['gbs'],
        study['parallelism'], study['expert_data_parallel_size']) == (
            16, 'H100_80GB', 'BF16', 8192, 1, 16, 'TP1_PP1_CP1_EP8_DP16', 2), study
rev = study['revisions']
for e in study['experiments']:
    mods = e['recompute_modules']
    part = '-'.join(m.replace('_', '-') for m in mods) or 'none'
    rid = 'megatron-bridge-skills-h100-nemotron-3-nano-16gpu-bf16-recompute-' + part
    ran = e['status'].startswith('completed')
    other = OD([('recompute_modules', mods), ('status_as_printed', e['status'])])
    if ran:
        other['step_time_ms_as_printed'] = e['step_time_ms']
        other['model_tflops_per_gpu_as_printed'] = e['tflops_per_gpu']
        other['window'] = 'mean over iterations 7-12'
    r = record(rid, path, 'measured_results: Nemotron 3 Nano, pretrain_capacity_short_run (2026-08-12)',
               'experiment %s: recompute_modules %s, %s' % (e['name'], mods, e['status']),
               'nemotron_3_nano_pretrain_8gpu_h100_bf16_config (src/megatron/bridge/recipes/nemotronh/h100/'
               'nemotron_3_nano.py) at %s, Megatron-Core %s, on 16 GPUs' % (rev['bridge'], rev['megatron_core']),
               'Nemotron_3_Nano', 'nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16', 8192, 16, 1, 1, 1, 8, 1, 16,
               e['step_time_ms'] / 1e3 if ran else None, e.get('tflops_per_gpu'), other,
               'Megatron-Bridge performance skill activation-recompute: %s %s; this row recompute_modules %s: %s.' %
               (' '.join(study['comparison_limitations'].split()), study['execution'], mods, e['status']))
    if ran:
        records.append(r)
        memory.append(memory_record(r, OD([
            ('peak_allocated_gib', round(e['peak_mem_gb'] * GIB_PER_GB, 3)), ('reserved_gib', None),
            ('peak_gib', None),
            ('metric', 'peak allocated, rank 0, after iteration 2 (the study: "%s")' % study['measurement']),
            ('value_as_printed', str(e['peak_mem_gb'])),
            ('unit_as_printed', 'GB: Megatron-Bridge logs bytes / 1.0e9 rounded to five significant digits '
                                '(training/utils/train_utils.py report_memory at %s)' % rev['bridge'][:10]),
            ('which_rank', 'rank 0'), ('notes', None),
        ])))
    else:
        assert e['status'].startswith('OOM'), e
        m = memory_record(r, OD([('outcome', 'out_of_memory'),
                                 ('notes', 'status %s%s' % (e['status'], '; rank-0 peak %s GB after iteration 1 '
                                                            '(a failing run\'s, not recorded as a peak)' %
                                                            e['peak_mem_gb_after_iteration_1']
                                                            if 'peak_mem_gb_after_iteration_1' in e else ''))]))
        m['measured']['outcome'] = 'out_of_memory'
        memory.append(m)

with open(args.out_dir + '/tests/data/validation/megatron_bridge_skills.json', 'w') as f:
    json.dump(records, f, indent=1, ensure_ascii=False)
    f.write('\n')
with open(args.out_dir + '/tests/data/memory/megatron_bridge_skills_memory.json', 'w') as f:
    json.dump(memory, f, indent=1, ensure_ascii=False)
    f.write('\n')
for r in records:
    print('%-75s %8.4f s' % (r['id'], r['measured']['iteration_time_s']))
for m in memory:
    print('%-75s %s' % (m['id'], m['measured'].get('peak_allocated_gib') or m['measured'].get('outcome')))
