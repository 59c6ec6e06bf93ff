#!/usr/bin/env python3
"""The Megatron-LM README's H100 strong-scaling figure (2024) as validation records, and the
interleaving its runs used as launch entries: tests/data/validation/megatron_lm_readme_2024.json and
presets/launches/megatron-lm-readme-2024.json.

  python3 scripts/megatron_readme_scaling.py --mirror <a git dir of github.com/NVIDIA/Megatron-LM> --out-dir .

The figure (images/strong_scaling.png, added with the README's model table in f2e5db402c,
2024-07-15) plots GPT 177B's aggregate PFLOP/s against the GPU count on log-log axes, one marker
per run, and prints no value. The script decodes the PNG (zlib, the five PNG row filters; no
imaging package), places each axis by its gridlines (x: 100, 500, 1000 and 5000 GPUs, y: 50, 100,
500 and 1000 PFLOP/s, as the tick labels print them; a least-squares line of log10 value against
pixel through the four), finds the markers (the green disks: pixels of the line's colour whose
horizontal and vertical runs are both at least 25 pixels long, clustered) and reads each marker's
centre. Checks: every marker's GPU count lands within 1% of a multiple of 48 (the table's
TP 8 x PP 6 replica); the 2,304-GPU marker within 1% of the table's 997.2 PFLOP/s for that run.
"""
import argparse, collections, json, math, struct, subprocess, zlib

C = 'f2e5db402c44ae309aa6448bcb4ae87e8ae0f5f4'
URL = 'https://github.com/NVIDIA/Megatron-LM/blob/%s/' % C
GREEN = (127, 167, 86)  # the "Megatron-Core r0.8.0" series' colour
GRID = 203              # the gridlines' grey
X_TICKS = [100, 500, 1000, 5000]
Y_TICKS = [1000, 500, 100, 50]  # top to bottom
TABLE_2304_PFLOPS = 997.2       # model_table.png, 177B row: 2,304 GPUs, 997.2 aggregate PFLOP/s
# The model table's PP > 1 rows (model, layers, pp) and the records of the figure.
TABLE_PP = [('70B', 84, 2), ('119B', 92, 4), ('177B', 96, 6), ('314B', 96, 8), ('462B', 112, 16)]

ap = argparse.ArgumentParser()
ap.add_argument('--mirror', required=True, help='git dir of NVIDIA/Megatron-LM holding commit %s' % C)
ap.add_argument('--out-dir', default='.')
args = ap.parse_args()


def show(path, text=True):
    return subprocess.run(['git', '--git-dir', args.mirror, 'show', '%s:%s' % (C, path)], check=True,
                          capture_output=True, text=text).stdout


def decode_png(data):
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat = 8, b''
    while pos < len(data):
        n, = struct.unpack('>I', data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b'IHDR':
            w, h, depth, colour, _, _, interlace = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
    assert depth == 8 and colour == 6 and interlace == 0, 'expected 8-bit RGBA, not interlaced'
    raw, bpp, stride = zlib.decompress(idat), 4, w * 4
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                line[x] = (line[x] + (((line[x - bpp] if x >= bpp else 0) + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


w, h, rows = decode_png(show('images/strong_scaling.png', text=False))


def is_grid(r, x):
    return r[4 * x] == r[4 * x + 1] == r[4 * x + 2] and abs(r[4 * x] - GRID) <= 12 and r[4 * x + 3] == 255


def lines(counts, least):
    """Centres of the runs of adjacent indices whose count is at least `least` (a gridline a few
    pixels wide)."""
    out, run = [], []
    for i, c in enumerate(counts + [0]):
        if c >= least:
            run.append(i)
        elif run:
            out.append(sum(run) / len(run))
            run = []
    return out


col, row, black_col, black_row = [0] * w, [0] * h, [0] * w, [0] * h
for y in range(h):
    r = rows[y]
    for x in range(w):
        if is_grid(r, x):
            col[x] += 1
            row[y] += 1
        elif r[4 * x] < 40 and r[4 * x + 1] < 40 and r[4 * x + 2] < 40 and r[4 * x + 3] == 255:
            black_col[x] += 1
            black_row[y] += 1
# The axes are black; the grey beside them is their anti-aliased edge, not a gridline.
axes_x, axes_y = lines(black_col, h // 2), lines(black_row, w * 3 // 4)
xs = [x for x in lines(col, h // 2) if all(abs(x - a) > 8 for a in axes_x)]
ys = [y for y in lines(row, w * 3 // 4) if all(abs(y - a) > 8 for a in axes_y)]
assert len(xs) == 4 and len(ys) == 4, 'gridlines: %s %s' % (xs, ys)


def fit(px, values):
    n, lv = len(px), [math.log10(v) for v in values]
    mx, my = sum(px) / n, sum(lv) / n
    b = sum((p - mx) * (v - my) for p, v in zip(px, lv)) / sum((p - mx) ** 2 for p in px)
    a = my - b * mx
    worst = max(abs(v - (a + b * p)) for p, v in zip(px, lv))
    return a, b, worst


ax, bx, wx = fit(xs, X_TICKS)
ay, by, wy = fit(ys, Y_TICKS)
assert wx < 0.003 and wy < 0.003, 'a gridline off the log axis by %.4f / %.4f decades' % (wx, wy)

g = [[abs(r[4 * x] - GREEN[0]) <= 25 and abs(r[4 * x + 1] - GREEN[1]) <= 25 and
      abs(r[4 * x + 2] - GREEN[2]) <= 25 and r[4 * x + 3] > 200 for x in range(w)] for r in rows]


def run_lengths(flags):
    """For each position, the length of the run of True it sits in (0 where False)."""
    out, i = [0] * len(flags), 0
    while i < len(flags):
        j = i
        while j < len(flags) and flags[j]:
            j += 1
        out[i:j] = [j - i] * (j - i)
        i = max(j, i + 1)
    return out


columns = [run_lengths([g[y][x] for y in range(h)]) for x in range(w)]
disk = [(x, y) for y in range(h) for x, n in enumerate(run_lengths(g[y])) if n >= 25 and columns[x][y] >= 25]
clusters = []
for x, y in disk:
    for c in clusters:
        if abs(c[0][0] - x) < 60 and abs(c[0][1] - y) < 60:
            c.append((x, y))
            break
    else:
        clusters.append([(x, y)])
# Markers are the solid disks of the plot area (the legend's, above the top gridline, and the
# bold "177B" labels, whose strokes give fewer pixels, are not).
markers = sorted((sum(p[0] for p in c) / len(c), sum(p[1] for p in c) / len(c)) for c in clusters
                 if len(c) >= 600 and min(p[1] for p in c) > ys[0] - 300)
assert len(markers) == 8, markers

points = []
for mx, my in markers:
    gpus_read = 10 ** (ax + bx * mx)
    gpus = 48 * round(gpus_read / 48)
    assert abs(gpus_read / gpus - 1) < 0.01, (gpus_read, gpus)
    points.append((gpus, gpus_read, 10 ** (ay + by * my), mx, my))
by_gpus = {p[0]: p for p in points}
assert abs(by_gpus[2304][2] / TABLE_2304_PFLOPS - 1) < 0.01, by_gpus[2304]
check = by_gpus[2304][2] / TABLE_2304_PFLOPS - 1

readme = show('README.md')
assert 'using the same batch size of 1152 sequences throughout' in readme
assert 'from 96 H100 GPUs to 4608 GPUs' in readme
assert 'pipeline-parallel communication (enabled by default)' in readme

records = []
for gpus, gpus_read, pflops, mx, my in points:
    if gpus == 2304:
        continue  # the table's 177B row (published_beyond_tuning.json), printed there
    dp = gpus // 48
    records.append(collections.OrderedDict([
        ('id', 'megatronlm-readme-h100-2024-177B-strong-%dgpu' % gpus),
        ('source', collections.OrderedDict([
            ('paper', 'MegatronLM-README (github.com/NVIDIA/Megatron-LM)'),
            ('repo', 'NVIDIA/Megatron-LM'),
            ('path', 'images/strong_scaling.png'),
            ('commit', C),
            ('url', URL + 'images/strong_scaling.png'),
            ('table', "README 'Training Speed and Scalability', strong-scaling figure (images/strong_scaling.png, "
                      'added 2024-07-15 in f2e5db402c with the model table; legend: Megatron-Core r0.8.0)'),
            ('row', 'marker at %d GPUs (label 177B)' % gpus),
            ('read_from', 'the PNG decoded by scripts/megatron_readme_scaling.py from a fetched mirror '
                          '(git show f2e5db402c:images/strong_scaling.png), 2026-12-06'),
        ])),
        ('kind', 'figure_values'),
        ('model', collections.OrderedDict([
            ('name', 'GPT 177B'), ('params_b', None), ('layers', 96), ('hidden', 12288), ('heads', 96),
            ('kv_heads', None), ('ffn_hidden', None), ('vocab', 131072), ('seq_len', 4096),
            ('notes', "The figure's markers are labelled 177B; its dimensions are the model table's 177B row "
                      '(96 heads, hidden 12288, 96 layers); README: vocabulary 131,072, sequence length 4096.'),
        ])),
        ('hardware', collections.OrderedDict([
            ('gpu', 'H100'), ('count', gpus), ('peak_tflops_per_gpu_used_by_authors', None), ('precision', None),
            ('notes', 'Megatron-Core r0.8.0 (the legend). Precision not printed: the model table prints MFU '
                      'against the BF16 dense peak (465.9 TFLOP/s at 47%).'),
        ])),
        ('parallel', collections.OrderedDict([
            ('tp', 8), ('pp', 6), ('dp', dp), ('cp', None), ('ep', None), ('vpp', None),
            ('model_parallel_size', None), ('zero_stage', None), ('fsdp', None), ('recompute', None),
            ('sequence_parallel', None),
            ('notes', "The model table's 177B layout (TP 8, PP 6: 48 GPUs a replica) with the data-parallel "
                      'size the GPU count leaves (%d / 48 = %d): strong scaling at one batch keeps the model '
                      "split. README: --overlap-grad-reduce --overlap-param-gather, --tp-comm-overlap, PP "
                      'overlap by default (the interleave degree: presets/launches/megatron-lm-readme-2024.json).'
                      % (gpus, dp)),
        ])),
        ('microbatch', None),
        ('global_batch', 1152),
        ('global_batch_tokens', None),
        ('measured', collections.OrderedDict([
            ('tflops_per_gpu', None), ('mfu_pct', None), ('hfu_pct', None), ('pct_of_peak', None),
            ('aggregate_pflops', round(pflops, 1)), ('iteration_time_s', None), ('tokens_per_s', None),
            ('tokens_per_s_per_gpu', None), ('memory_gib', None), ('training_days', None),
            ('other', collections.OrderedDict([
                ('marker_centre_px', [round(mx, 1), round(my, 1)]),
                ('gpus_read', round(gpus_read, 1)),
            ])),
        ])),
        ('derived_fields', ['parallel.tp', 'parallel.pp', 'parallel.dp', 'measured.aggregate_pflops']),
        ('confidence', 'medium'),
        ('notes', "Read from the figure, which prints no values: the marker's centre on log axes placed by "
                  'their gridlines (%.0f px a decade across, %.0f up; the gridlines within %.4f decade of a '
                  'straight log axis), about 0.5%% either way. The 2,304-GPU marker reads %.1f PFLOP/s where '
                  "the table prints 997.2 for that run (%+.1f%%). README: 'We also strong scaled the standard "
                  "GPT-3 model ... from 96 H100 GPUs to 4608 GPUs, using the same batch size of 1152 sequences "
                  "throughout' (MFU 47%% to 42%%); the aggregate PFLOP/s is counted as the table's (Megatron-LM's "
                  'num_floating_point_operations). Not trained to convergence.'
                  % (1 / bx, -1 / by, max(wx, wy), by_gpus[2304][2], 100 * check)),
    ]))

launch = collections.OrderedDict([
    ('source', "Megatron-LM README 'Training Speed and Scalability' and megatron/training/arguments.py at %s "
               '(2024-07-15, github.com/NVIDIA/Megatron-LM)' % C[:10]),
    ('notes', "What the README's runs do not print: the interleave degree. The README says the runs overlap "
              "'pipeline-parallel communication (enabled by default)'; at that commit arguments.py turns that "
              'overlap (overlap_p2p_comm) off, with a warning, unless --num-layers-per-virtual-pipeline-stage '
              "is given ('non-interleaved schedule does not support overlapping p2p communication'), so every "
              'run with PP > 1 ran the interleaved schedule (and every one can: its microbatches a pipeline, '
              '8, 16, 24, 32 and 64 for the table at PP 2, 4, 6, 8 and 16, 576 down to 12 for the figure at PP 6, '
              'are multiples of PP, as that schedule requires: megatron/core/pipeline_parallel/schedules.py '
              'line 566). Its degree: one layer per virtual stage, '
              'vpp = layers / PP. The 119B and 462B rows leave no other (23 and 7 layers a stage, both prime: '
              'a chunk of 1 layer or the whole stage), NVIDIA published the same choice elsewhere (GPT-3 '
              "175B at PP 8 x VP 12 in MLPerf Training; 530B at PP 35 x VP 3, Korthikanti 2022), and the "
              "strong-scaling figure rules out the 177B's small degrees: from 2,304 to 4,608 GPUs (24 to 12 "
              'microbatches a pipeline) it loses 4.7% a GPU, where the bubble alone, (PP - 1) / (vpp x m) of the '
              'compute, adds 17% to the step with 1F1B, 9.4% with vpp 2, 4.9% with vpp 4, 2.5% with vpp 8 '
              'and 1.2% with vpp 16: only 8 and 16 leave room for the rest (derived; the README prints '
              'none).'),
    ('runs', collections.OrderedDict()),
])
for model, layers, pp in TABLE_PP:
    launch['runs']['megatronlm-readme-h100-2024-%s' % model] = {'vpp': layers // pp}
for rec in records:
    launch['runs'][rec['id']] = {'vpp': 96 // 6}

with open(args.out_dir + '/tests/data/validation/megatron_lm_readme_2024.json', 'w') as f:
    json.dump(records, f, indent=1)
    f.write('\n')
with open(args.out_dir + '/presets/launches/megatron-lm-readme-2024.json', 'w') as f:
    json.dump(launch, f, indent=1)
    f.write('\n')
for gpus, gpus_read, pflops, mx, my in points:
    print('%5d GPUs (read %7.1f): %7.1f PFLOP/s, %5.1f TFLOP/s a GPU, MFU %.1f%%' %
          (gpus, gpus_read, pflops, pflops * 1e3 / gpus, pflops * 1e17 / gpus / 989.4e12))
