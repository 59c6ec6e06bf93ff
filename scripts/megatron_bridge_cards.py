#!/usr/bin/env python3
"""Megatron-Bridge's model verification cards (examples/model_verification_cards/*/card.yaml) as
validation records: tests/data/validation/megatron_bridge_cards.json (and the three runs whose card
prints the peak memory: tests/data/memory/megatron_bridge_cards_memory.json).

  python3 scripts/megatron_bridge_cards.py --mirror <a git dir of github.com/NVIDIA-NeMo/Megatron-Bridge> --out-dir .

Each card's `items.pretrain_performance.<GPU>` entry that says `status: verified` is one run of a
named performance recipe (`--recipe` in its `command`) at a named Megatron-Bridge commit
(`bridge_commit`, else the card's `verification_environment.bridge_commit`) in a named NeMo
container, with the mean of its last ten steps: step time, model TFLOP/s per GPU and tokens/s per
GPU. The card's `expected_result` prints the layout for most runs (TP/PP/VP/CP/EP/ETP, GBS/MBS,
sequence length); where it does not, the recipe at the run's commit gives it (UNPRINTED and
FROM_RECIPE below, with the file and line). The step time is the measurement recorded (the
converter's `iteration_time_s`); the card's tokens/s and TFLOP/s per GPU are kept as printed. Runs of models meshplan has no preset for (DeepSeek-V4 Flash and the Qwen3.5/3.6
vision-language cards) are not recorded. Needs PyYAML.
"""
import collections, json, re, yaml

from megatron_bridge_common import GIB_PER_GB, LOGGED_GB, git_show, mirror_args

CARDS_AT = '067f987df03b8355b03192d88d70f1709fedf51a'  # main, 2026-08-22
URL = 'https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/%s/' % CARDS_AT
# card directory -> (record model name as the performance pages print it, id part)
MODELS = collections.OrderedDict([
    ('deepseek-v3', ('DeepSeekV3', 'deepseekv3')),
    ('gpt-oss-120b', ('GPT OSS 120B', 'gpt-oss-120b')),
    ('nemotron-3-nano-30b-a3b', ('Nemotron_3_Nano', 'nemotron-3-nano')),
    ('nemotron-3-super-120b-a12b', ('Nemotron_3_Super', 'nemotron-3-super')),
    ('nemotron-3.5-lightning', ('Nemotron_3_5_Lightning', 'nemotron-3-5-lightning')),
    ('qwen3-235b-a22b', ('Qwen3_235B_a22B', 'qwen3-235b-a22b')),
    ('qwen3-30b-a3b', ('Qwen3_30B_a3B', 'qwen3-30b-a3b')),
])
PRECISION = {'bf16': 'BF16', 'fp8_mx': 'MXFP8', 'nvfp4': 'NVFP4'}
# Layouts the card's text does not print, read from the recipe at the run's commit:
# (card, GPU) -> (tp, pp, vpp, cp, ep, etp, mbs, gbs, seq, evidence).
UNPRINTED = {
    ('qwen3-30b-a3b', 'H100'): (1, 1, None, 1, 16, 1, 1, 1024, 4096,
                                'src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py:167-178 (the library recipe '
                                'perf_recipes/qwen/h100/qwen3_moe.py:37 builds on)'),
    ('qwen3-30b-a3b', 'GB200'): (1, 1, None, 1, 8, 1, 4, 512, 4096,
                                 'src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py:306-322'),
    ('nemotron-3.5-lightning', 'H100'): (1, 1, None, 1, 8, 1, 1, 512, 8192,
                                         'src/megatron/bridge/perf_recipes/nemotronh/h100/nemotronh.py:74-81 and 181 '
                                         '(global batch 512), perf_recipes/nemotronh/common.py:42-43 (sequence)'),
    ('nemotron-3.5-lightning', 'GB200'): (1, 1, None, 1, 8, 1, 2, 512, 8192,
                                          'src/megatron/bridge/perf_recipes/nemotronh/gb200/nemotronh.py:221-228, '
                                          'perf_recipes/nemotronh/common.py:42-43 (sequence); read at 92abf628c5, the '
                                          "card's own commit 9b0c2dff42 not being on main (the recipe unchanged on main "
                                          'from 4810068ad to 92abf628c5)'),
}
# What the card's text prints without: (card, GPU) -> {field: (value, evidence)}.
FROM_RECIPE = {
    ('qwen3-235b-a22b', 'GB300'): {'vpp': (12, 'src/megatron/bridge/perf_recipes/qwen/gb300/qwen3_moe.py:474-481')},
    ('gpt-oss-120b', 'GB200'): {'seq': (4096, 'src/megatron/bridge/recipes/gpt_oss/h100/gpt_oss.py:179,192')},
    ('nemotron-3-super-120b-a12b', 'H100'): {
        'seq': (4096, 'src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_super.py:186-191')},
    ('nemotron-3-super-120b-a12b', 'GB200'): {
        'seq': (8192, 'src/megatron/bridge/recipes/nemotronh/h100/nemotron_3_super.py:56,62 (the perf recipe, '
                      'perf_recipes/nemotronh/gb200/nemotronh.py:66-109, sets none)')},
}
# Verified runs not recorded: why.
NOT_RECORDED = {
    ('nemotron-3-super-120b-a12b', 'GB300'): 'NVFP4 with a BF16 tail (te_quant.cfg keeps attention, latent and MTP '
                                             'projections in BF16): one GEMM precision a plan, as for the pages\' NVFP4 '
                                             'Nemotron 3 Super rows',
}

args = mirror_args(CARDS_AT)


def show(path):
    return git_show(args.mirror, CARDS_AT, path)


def printed_layout(text):
    """TP/PP[/VP]/CP/EP[/ETP], GBS/MBS and the sequence length as the card's text prints them."""
    t = ' '.join(text.split())
    m = re.search(r'TP(\d+)/PP(\d+)(?:/VP(\d+))?/CP(\d+)/EP(\d+)(?:/ETP(\d+))?', t)
    b = re.search(r'GBS/MBS (\d+)/(\d+)', t)
    if not m or not b:
        return None
    vp = re.search(r'VPP(\d+)', t)
    seq = re.search(r'sequence length (\d+)', t)
    tp, pp, vpp, cp, ep, etp = m.groups()
    return dict(tp=int(tp), pp=int(pp), vpp=int(vpp or (vp.group(1) if vp else 0)) or None, cp=int(cp), ep=int(ep),
                etp=int(etp) if etp else None, gbs=int(b.group(1)), mbs=int(b.group(2)),
                seq=int(seq.group(1)) if seq else None)


records = []
for card, (name, part) in MODELS.items():
    path = 'examples/model_verification_cards/%s/card.yaml' % card
    y = yaml.safe_load(show(path))
    env = y.get('verification_environment') or {}
    for gpu, run in ((y.get('items') or {}).get('pretrain_performance') or {}).items():
        if not isinstance(run, dict) or run.get('status') != 'verified':
            continue
        cmd = ' '.join(run['command'].split())
        recipe = re.search(r'--recipe (\S+)', cmd).group(1)
        commit = run.get('bridge_commit') or env['bridge_commit']
        container = env['base_container']
        release = re.search(r'nemo:(\d\d)\.(\d\d)', container)
        rel = release.group(1) + release.group(2)
        if (card, gpu) in NOT_RECORDED:
            continue
        lay = printed_layout(run.get('expected_result', ''))
        evidence = 'as the card prints it (expected_result)'
        from_recipe = []
        if lay is None:
            u = UNPRINTED[(card, gpu)]
            lay = dict(zip(('tp', 'pp', 'vpp', 'cp', 'ep', 'etp', 'mbs', 'gbs', 'seq'), u[:9]))
            evidence = 'not printed by the card; from the recipe at %s: %s' % (commit[:10], u[9])
        for field, (value, where) in FROM_RECIPE.get((card, gpu), {}).items():
            assert not lay[field], (card, gpu, field)
            lay[field] = value
            from_recipe.append('%s %s from the recipe at %s (%s)' % (field, value, commit[:10], where))
        seq_cli = re.search(r'--seq_length (\d+)', cmd)
        seq = int(seq_cli.group(1)) if seq_cli else lay['seq']
        assert seq and (not lay['seq'] or lay['seq'] == seq), (card, gpu)
        gpus = int(re.search(r'--nodes (\d+)', cmd).group(1)) * int(re.search(r'--gpus-per-node (\d+)', cmd).group(1))
        met = run['metrics']
        step_s = met['last_10_steps_step_time_ms_avg'] / 1e3
        tok = met['last_10_steps_tokens_per_second_per_gpu_avg']
        # The measurement recorded is the step time; the card's tokens/s per GPU is the step's token
        # slots over it, counted at 4,096 tokens a sequence where the run's is 8,192 on one card
        # (Nemotron 3 Super on GB200: its TFLOP/s per token is twice the model's at 8,192), said so.
        slots = lay['gbs'] * seq / step_s / gpus
        tokens_note = ''
        if abs(slots / tok - 1) > 0.005:
            assert abs(lay['gbs'] * 4096 / step_s / gpus / tok - 1) < 0.005, (card, gpu, slots, tok)
            tokens_note = (' The card\'s tokens/s per GPU (%.1f) is GBS x 4,096 / step / GPUs, where the recipe '
                           'runs %d tokens a sequence: recorded as printed, not used (the step time is).' % (tok, seq))
        prec = PRECISION[run['precision']]
        g = {'H100': 'H100', 'GB200': 'GB200 (DGX-GB200)', 'GB300': 'GB300 (DGX-GB300)'}[gpu]
        rid = 'megatron-bridge-%s-card-%s-%s-%dgpu-%s' % (rel, gpu.lower(), part, gpus, prec.lower())
        dp = gpus // (lay['tp'] * lay['pp'] * lay['cp'])
        other = collections.OrderedDict([
            ('step_time_ms_as_printed', met['last_10_steps_step_time_ms_avg']),
            ('model_tflops_per_gpu_as_printed', met['last_10_steps_model_tflops_per_gpu_avg']),
            ('tokens_per_s_per_gpu_as_printed', tok),
            ('window', 'mean of the last ten of 50 steps (metrics last_10_steps_*)'),
        ])
        for k in ('peak_allocated_memory_gib', 'peak_reserved_memory_gib'):
            if k in met:
                other[k] = met[k]
        records.append(collections.OrderedDict([
            ('id', rid),
            ('source', collections.OrderedDict([
                ('paper', 'Megatron-Bridge model verification cards (github.com/NVIDIA-NeMo/Megatron-Bridge)'),
                ('repo', 'NVIDIA-NeMo/Megatron-Bridge'),
                ('path', path),
                ('commit', CARDS_AT),
                ('url', URL + path),
                ('table', 'items.pretrain_performance.%s (status verified, last_verified %s)' % (gpu, run.get('last_verified'))),
                ('row', cmd),
                ('recipe', '%s at %s' % (recipe, commit)),
                ('container', container),
                ('read_from', 'a fetched mirror (git show %s:%s), 2026-12-06' % (CARDS_AT[:10], path)),
            ])),
            ('kind', 'table_row'),
            ('model', collections.OrderedDict([
                ('name', name), ('params_b', None), ('layers', None), ('hidden', None), ('heads', None),
                ('kv_heads', None), ('ffn_hidden', None), ('vocab', None), ('seq_len', seq),
                ('notes', "Architecture not printed; the named model's public config (the card's hf_id: %s)." %
                 (y.get('model') or {}).get('hf_id')),
            ])),
            ('hardware', collections.OrderedDict([
                ('gpu', g), ('count', gpus), ('peak_tflops_per_gpu_used_by_authors', None), ('precision', prec),
                ('notes', 'The card names the GPU only (%s); %d nodes of %d GPUs (--nodes, --gpus-per-node).' %
                 (gpu, gpus // int(re.search(r'--gpus-per-node (\d+)', cmd).group(1)),
                  int(re.search(r'--gpus-per-node (\d+)', cmd).group(1)))),
            ])),
            ('parallel', collections.OrderedDict([
                ('tp', lay['tp']), ('pp', lay['pp']), ('dp', dp), ('cp', lay['cp']), ('ep', lay['ep']),
                ('vpp', lay['vpp']), ('model_parallel_size', None), ('zero_stage', None), ('fsdp', None),
                ('recompute', None), ('sequence_parallel', None),
                ('notes', 'Layout %s%s; ETP %s; DP = GPUs / (TP x PP x CP), derived. What else the recipe sets: '
                 'presets/launches/megatron-bridge-cards.json.' %
                 (evidence, ''.join('; ' + f for f in from_recipe), lay['etp'])),
            ])),
            ('microbatch', lay['mbs']),
            ('global_batch', lay['gbs']),
            ('global_batch_tokens', None),
            ('measured', collections.OrderedDict([
                ('tflops_per_gpu', met['last_10_steps_model_tflops_per_gpu_avg']), ('mfu_pct', None),
                ('hfu_pct', None), ('pct_of_peak', None), ('aggregate_pflops', None),
                ('iteration_time_s', step_s), ('tokens_per_s', None), ('tokens_per_s_per_gpu', None),
                ('memory_gib', None), ('training_days', None), ('other', other),
            ])),
            ('derived_fields', ['parallel.dp'] +
             (['parallel.tp', 'parallel.pp', 'parallel.cp', 'parallel.ep', 'microbatch', 'global_batch']
              if evidence.startswith('not printed') else []) +
             [{'vpp': 'parallel.vpp', 'seq': 'model.seq_len'}[f] for f in FROM_RECIPE.get((card, gpu), {})]),
            ('confidence', 'high'),
            ('notes', 'Megatron-Bridge model verification card, pretraining performance, "%s" run on %s: %s%s' %
             (run['precision'], gpu, ' '.join(run.get('expected_result', '').split()), tokens_note)),
        ]))

# The runs whose card also prints the peak memory: tests/data/memory/megatron_bridge_cards_memory.json,
# the same record with the memory as measured (peak allocated and reserved, as the card's text
# says: Megatron-Bridge's logger.log_device_memory_used, torch.cuda.max_memory_allocated/reserved).
# The cards label these GiB, but they are Megatron-Bridge's logged decimal GB (megatron_bridge_common.py).
memory = []
for r in records:
    other = r['measured']['other']
    text = r['notes']
    in_text = re.search(r'Peak device memory is ([\d.]+) GiB allocated and ([\d.]+) GiB reserved', text)
    if 'peak_allocated_memory_gib' in other:
        alloc, rsv = other['peak_allocated_memory_gib'], other['peak_reserved_memory_gib']
        where = "the card's metrics peak_allocated_memory_gib and peak_reserved_memory_gib"
    elif in_text:
        alloc, rsv = float(in_text.group(1)), float(in_text.group(2))
        where = "the card's expected_result: '%s'" % in_text.group(0)
    else:
        continue
    # The same id as the throughput record (the memory corpus's convention), for the launch entry.
    m = json.loads(json.dumps(r), object_pairs_hook=collections.OrderedDict)
    rank0 = 'rank-0' in text
    m['measured'] = collections.OrderedDict([
        ('peak_allocated_gib', round(alloc * GIB_PER_GB, 3)),
        ('reserved_gib', round(rsv * GIB_PER_GB, 3)),
        ('peak_gib', None),
        ('metric', 'peak allocated and peak reserved (%s: torch.cuda max_memory_allocated / max_memory_reserved, '
                   'as Megatron-Bridge logs them)' % where),
        ('value_as_printed', '%s / %s' % (alloc, rsv)),
        ('unit_as_printed', 'GiB, read as 1e9 bytes: ' + LOGGED_GB),
        ('which_rank', 'rank 0 (the card: "peak rank-0 allocated/reserved memory")' if rank0 else
         'not stated (the card: "Peak device memory is ... allocated and ... reserved")'),
        ('notes', None),
    ])
    memory.append(m)
with open(args.out_dir + '/tests/data/memory/megatron_bridge_cards_memory.json', 'w') as f:
    json.dump(memory, f, indent=1, ensure_ascii=False)
    f.write('\n')
with open(args.out_dir + '/tests/data/validation/megatron_bridge_cards.json', 'w') as f:
    json.dump(records, f, indent=1, ensure_ascii=False)
    f.write('\n')
for r in records:
    p = r['parallel']
    print('%-62s tp%d pp%d vpp%s ep%d mbs%d gbs%d seq%d %7.3f s' %
          (r['id'], p['tp'], p['pp'], p['vpp'], p['ep'], r['microbatch'], r['global_batch'], r['model']['seq_len'],
           r['measured']['iteration_time_s']))
