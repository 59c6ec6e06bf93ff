#!/usr/bin/env python3
"""Megatron-LM's MoE recipes (examples/moe_recipes at the dev branch's 9c5258f109) as validation records
and launch entries: tests/data/validation/megatron_lm_moe_recipes.json and
presets/launches/megatron-lm-moe-recipes.json.

  python3 scripts/megatron_moe_recipes.py --mirror <a git dir of github.com/NVIDIA/Megatron-LM> --out-dir .

The README's Recipe Index rows (transcribed below: model, recipe, GPUs, TP/PP/EP/CP/ETP, MBS/GBS/SL,
features, median TFLOP/s per GPU) and each recipe's YAML, read with `git show 9c5258f109:<path>`; the
script checks every printed layout against the YAML's ARGS and takes the rest of each run's settings
from them (the evidence names the key). Needs PyYAML.
"""
import argparse, json, subprocess, yaml, collections
C='9c5258f1090cf22ad0fbf55472e14a9cdc5642cf'
BASE='https://github.com/NVIDIA/Megatron-LM/blob/%s/examples/moe_recipes/' % C
# (id suffix, yaml file, model name, gpu as printed, gpus, tuple, mbs/gbs/sl, features, tflops, precision)
rows = [
 ('qwen3-30b-a3b-h100-32gpu-fp8','qwen3_30b/h100/fp8_32GPU_TP1PP1EP8.yaml','Qwen3-30B-A3B','H100','H100 FP8',32,'1/1/8/1/1','1/256/4096','FP8 blockwise; router/preprocess CG',232.4,'FP8 blockwise'),
 ('qwen3-30b-a3b-h100-32gpu-bf16','qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml','Qwen3-30B-A3B','H100','H100 BF16',32,'1/1/8/1/1','1/256/4096','BF16 baseline',234.1,'BF16'),
 ('qwen3-30b-a3b-gb200-16gpu-bf16','qwen3_30b/gb200/bf16_16GPU_TP1PP1EP16.yaml','Qwen3-30B-A3B','GB200','GB200 BF16',16,'1/1/16/1/1','4/512/4096','BF16 baseline',528,'BF16'),
 ('qwen3-30b-a3b-gb200-16gpu-mxfp8-partial-cg','qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_partial_cg.yaml','Qwen3-30B-A3B','GB200','GB200 MXFP8 partial CG',16,'1/1/16/1/1','4/512/4096','MXFP8; partial CG',514,'MXFP8'),
 ('qwen3-30b-a3b-gb200-16gpu-mxfp8-paged-stash','qwen3_30b/gb200/mxfp8_16GPU_TP1PP1EP16_paged_stash.yaml','Qwen3-30B-A3B','GB200','GB200 MXFP8 paged stash',16,'1/1/16/1/1','4/512/4096','MXFP8; paged stash; full CG',646.8,'MXFP8'),
 ('qwen3-235b-a22b-h100-256gpu-bf16','qwen3_235b/h100/bf16_256GPU_TP2PP8EP32.yaml','Qwen3-235B-A22B','H100','H100 BF16',256,'2/8/32/1/1','1/2048/4096','router/preprocess CG; HybridEP; EP overlap',214.3,'BF16'),
 ('qwen3-235b-a22b-b200-128gpu-mxfp8','qwen3_235b/b200/mxfp8_128GPU_TP2PP4EP16.yaml','Qwen3-235B-A22B','B200','B200 MXFP8',128,'2/4/16/1/1','3/3072/4096','DeepEP; EP overlap; VPP12',633.9,'MXFP8'),
 ('qwen3-235b-a22b-b300-128gpu-mxfp8-partial-cg','qwen3_235b/b300/mxfp8_128GPU_TP2PP1EP16_partial_cg.yaml','Qwen3-235B-A22B','B300','B300 MXFP8 partial CG',128,'2/1/16/1/1','3/9216/4096','partial CG; HybridEP; EP overlap',922.6,'MXFP8'),
 ('qwen3-235b-a22b-gb200-128gpu-mxfp8-full-cg','qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_paged_stash_fullcg_overlap.yaml','Qwen3-235B-A22B','GB200','GB200 MXFP8 full CG',128,'1/1/64/1/1','1/8192/4096','paged stash; full CG; HybridEP; EP overlap',1159.5,'MXFP8'),
 ('qwen3-235b-a22b-gb200-128gpu-mxfp8-partial-cg','qwen3_235b/gb200/mxfp8_128GPU_TP1PP1EP64_partial_cg_overlap.yaml','Qwen3-235B-A22B','GB200','GB200 MXFP8 partial CG',128,'1/1/64/1/1','1/8192/4096','partial CG; HybridEP; EP overlap',1018,'MXFP8'),
 ('qwen3-235b-a22b-gb300-128gpu-mxfp8-full-cg','qwen3_235b/gb300/mxfp8_128GPU_TP1PP1EP64_paged_stash_full_cg.yaml','Qwen3-235B-A22B','GB300','GB300 MXFP8 full CG',128,'1/1/64/1/1','1/8192/4096','paged stash; full CG; HybridEP; EP overlap',1323.1,'MXFP8'),
 ('deepseek-v3-b200-256gpu-mxfp8','deepseek_v3/b200/mxfp8_256GPU_TP1PP8EP32.yaml','DeepSeek-V3','B200','B200 MXFP8',256,'1/8/32/1/1','1/2048/4096','DeepEP; EP overlap',776.7,'MXFP8'),
 ('deepseek-v3-gb200-256gpu-mxfp8','deepseek_v3/gb200/mxfp8_256GPU_TP1PP4EP64.yaml','DeepSeek-V3','GB200','GB200 MXFP8',256,'1/4/64/1/1','1/8192/4096','HybridEP; partial CG; EP overlap; offload',1127.6,'MXFP8'),
 ('deepseek-v3-gb300-256gpu-mxfp8','deepseek_v3/gb300/mxfp8_256GPU_TP1PP4EP64.yaml','DeepSeek-V3','GB300','GB300 MXFP8',256,'1/4/64/1/1','1/8192/4096','HybridEP; partial CG; EP overlap',1357.7,'MXFP8'),
]
ap=argparse.ArgumentParser()
ap.add_argument('--mirror',required=True,help='git dir of NVIDIA/Megatron-LM holding commit %s'%C)
ap.add_argument('--out-dir',default='.')
args=ap.parse_args()
def show(path):
    return subprocess.run(['git','--git-dir',args.mirror,'show','%s:examples/moe_recipes/%s'%(C,path)],check=True,capture_output=True,text=True).stdout
# The README's table, read again: every transcribed row must be there as printed.
import re, html
readme = subprocess.run(['git', '--git-dir', args.mirror, 'show', '%s:examples/moe_recipes/README.md' % C],
                        check=True, capture_output=True, text=True).stdout
cells = [[html.unescape(re.sub(r'<[^>]+>', '', c)).strip() for c in re.findall(r'<td[^>]*>(.*?)</td>', tr, re.S)]
         for tr in re.findall(r'<tr>(.*?)</tr>', readme, re.S)]
printed = {tuple(c[-6:]) for c in cells if len(c) >= 6}
for (_, path, _, _, recipe, gpus, tup, bsl, feat, tf, _) in rows:
    want = (recipe, str(gpus), tup, bsl, feat, '%g' % tf)
    assert want in printed, 'not in the README as transcribed: %s' % (want,)
    assert ('href="%s"' % path) in readme, path
records=[]; runs=collections.OrderedDict()
for (suf,path,model,gpu,recipe,gpus,tup,bsl,feat,tf,prec) in rows:
    rid='megatron-lm-moe-recipes-'+suf
    y=yaml.safe_load(show(path))
    a=y['ARGS']
    tp,pp,ep,cp,etp=[int(x) for x in tup.split('/')]
    mbs,gbs,sl=[int(x) for x in bsl.split('/')]
    assert (a['tensor_model_parallel_size'],a['pipeline_model_parallel_size'],a['expert_model_parallel_size'],a['micro_batch_size'],a['global_batch_size'],a['seq_length'])==(tp,pp,ep,mbs,gbs,sl), rid
    dp=gpus//(tp*pp*cp)
    ev=[]  # evidence, YAML keys
    def k(key): 
        return a.get(key)
    # pipeline layout
    vpp=None; layout=None; stage=None; mtp=None
    if k('pipeline_model_parallel_layout'):
        layout=k('pipeline_model_parallel_layout'); ev.append("pipeline_model_parallel_layout='%s'"%layout)
        assert layout=='Et*4|(tttt|)*14tmL'
        stage=[4]*15+[1]; vpp=16//pp; layout='Etttt|'+'tttt|'*14+'tmL'
    elif k('num_layers_per_virtual_pipeline_stage'):
        n=k('num_layers_per_virtual_pipeline_stage'); L=a['num_layers']
        assert k('account_for_embedding_in_pipeline_split') and k('account_for_loss_in_pipeline_split')
        chunks=(L+2)//n; vpp=chunks//pp
        stage=[n-1]+[n]*(chunks-2)+[n-1]; assert sum(stage)==L
        layout='E'+'t'*(n-1)+'|'+('t'*n+'|')*(chunks-2)+'t'*(n-1)+'L'
        ev.append('num_layers_per_virtual_pipeline_stage=%d, account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split: (%d layers + 2) / %d = %d model chunks, VP %d'%(n,L,n,chunks,vpp))
    if k('mtp_num_layers'): mtp=k('mtp_num_layers'); ev.append('mtp_num_layers=%d'%mtp)
    # recompute
    rg=k('recompute_granularity')
    mods=k('recompute_modules')
    if isinstance(mods,str): mods=mods.split()
    if rg=='selective': ev.append('recompute_granularity=selective, recompute_modules=%s'%mods)
    else: mods=[]; ev.append('no recompute_granularity')
    # cuda graphs
    impl=k('cuda_graph_impl'); scope=k('cuda_graph_scope')
    if isinstance(scope,str) and scope!='full_iteration': scope=scope.split()
    if k('external_cuda_graph'): impl='transformer_engine'; ev.append('external_cuda_graph=True (Transformer Engine graphs), cuda_graph_scope=%s'%scope)
    elif impl: ev.append('cuda_graph_impl=%s, cuda_graph_scope=%s'%(impl,scope))
    else: ev.append('no cuda_graph_impl')
    if not impl: cg='none'
    elif impl=='local' and scope=='full_iteration': cg='local: full_iteration'
    else: cg='transformer_engine: '+', '.join(scope)
    disp='%s/%s'%(k('moe_token_dispatcher_type'),k('moe_flex_dispatcher_backend'))
    ev.append('moe_token_dispatcher_type=%s, moe_flex_dispatcher_backend=%s'%(k('moe_token_dispatcher_type'),k('moe_flex_dispatcher_backend')))
    a2a=bool(k('overlap_moe_expert_parallel_comm'))
    ev.append('overlap_moe_expert_parallel_comm=%s, delay_wgrad_compute=%s'%(k('overlap_moe_expert_parallel_comm'),k('delay_wgrad_compute')) if a2a else 'no overlap_moe_expert_parallel_comm')
    ogr=bool(k('overlap_grad_reduce')); opg=bool(k('overlap_param_gather'))
    ev.append('overlap_grad_reduce=%s, overlap_param_gather=%s'%(ogr,opg) + ('' if ogr else ' (not set: Megatron-LM default False)'))
    fpg=bool(k('fp8_param_gather'))
    if prec!='BF16': ev.append('fp8_format=%s, fp8_recipe=%s, fp8_param_gather=%s'%(k('fp8_format'),k('fp8_recipe'),fpg if fpg else 'not set (False)'))
    osd=None
    if k('use_precision_aware_optimizer'):
        osd=k('exp_avg_dtype'); assert k('exp_avg_sq_dtype')==osd and k('main_grads_dtype')=='fp32' and k('main_params_dtype')=='fp32'
        ev.append('use_precision_aware_optimizer, exp_avg_dtype=exp_avg_sq_dtype=%s, main_grads_dtype=main_params_dtype=fp32'%osd)
    ev.append('no grad_reduce_in_bf16: main grads fp32 (arguments.py:1313-1327)')
    assert not k('grad_reduce_in_bf16') and not k('tp_comm_overlap')
    assert k('cross_entropy_loss_fusion') and k('cross_entropy_fusion_impl')=='te'
    notes=[]
    if k('moe_paged_stash'): notes.append('moe_paged_stash with moe_expert_rank_capacity_factor=%s (a fixed per-rank expert buffer for the full-iteration graph, dropless under force-balanced routing; not modelled)'%k('moe_expert_rank_capacity_factor'))
    if k('fine_grained_activation_offloading'): notes.append('fine_grained_activation_offloading of %s (plan.offload.modules) and offload_optimizer_states=%s (not modelled: costed resident)'%(k('offload_modules'),k('offload_optimizer_states')))
    if k('use_transformer_engine_op_fuser'): notes.append("use_transformer_engine_op_fuser (Transformer Engine's fused ops for the MLP; not modelled)")
    rpad=bool(k('moe_router_padding_for_quantization') or k('moe_router_padding_for_fp8'))
    if k('num_layers_per_virtual_pipeline_stage') and a['tensor_model_parallel_size']>1: notes.append('make_vocab_size_divisible_by=%s keeps the vocabulary at 151,936 at TP 2; meshplan pads to 128 x TP (152,064)'%k('make_vocab_size_divisible_by'))
    if k('overlap_p2p_comm'): notes.append('overlap_p2p_comm (the interleaved schedule\'s sends overlapped; meshplan costs them blocking)')
    notes.append('manual_gc=%s; moe_router_force_load_balancing=%s (balanced routing, as meshplan costs it)'%(k('manual_gc'),k('moe_router_force_load_balancing')))
    run=collections.OrderedDict()
    if k('fine_grained_activation_offloading'): run['fine_grained_activation_offload']=list(k('offload_modules'))
    run['recompute']= 'selective' if mods else 'none'
    run['recompute_modules']=mods
    run['cuda_graph']=cg
    run['moe_dispatcher']=disp
    run['moe_a2a_overlap']=a2a
    if a2a and k('delay_wgrad_compute'): run['delay_wgrad']=True
    if rpad: run['moe_router_padding']=True; ev.append('moe_router_padding_for_%s: the router pads each expert\'s tokens for the quantized GEMMs'%('quantization' if k('moe_router_padding_for_quantization') else 'fp8'))
    run['tp_comm_overlap']=False
    run['overlap_grad_reduce']=ogr
    run['overlap_param_gather']=opg
    run['grad_reduce_in_fp32']=True
    run['fp8_param_gather']=fpg
    if osd: run['optimizer_states_dtype']=osd
    if vpp: run['vpp']=vpp
    if layout: run['pp_layout']=layout; run['stage_layers']=stage
    if mtp: run['mtp_layers']=mtp
    run['recipe']='examples/moe_recipes/%s @%s (dev branch, 2026-08-11)'%(path,C[:10])
    run['evidence']='; '.join(ev)
    run['notes']='; '.join(notes)
    runs[rid]=run
    rec=collections.OrderedDict()
    rec['id']=rid
    rec['source']={
      'paper':"Megatron-LM MoE recipes (github.com/NVIDIA/Megatron-LM), examples/moe_recipes/README.md 'Recipe Index'",
      'repo':'NVIDIA/Megatron-LM','path':'examples/moe_recipes/README.md','commit':C,
      'url':BASE+'README.md',
      'table':"## Recipe Index (Median TFLOP/s/GPU), dev branch @%s (2026-08-11; the Qwen3 and DeepSeek-V3 values as first published at e5ad09802d, 2026-06-15)"%C[:10],
      'row':'| %s | %s | %d | %s | %s | %s | %s |'%(model,recipe,gpus,tup,bsl,feat,('%g'%tf)),
      'recipe':BASE+path,
      'read_from':'a fetched mirror of github.com/NVIDIA/Megatron-LM (git show %s:examples/moe_recipes/...), 2026-12-06'%C[:10]}
    rec['kind']='table_row'
    rec['model']={'name':model,'params_b':None,'layers':a['num_layers'],'hidden':a['hidden_size'],'heads':a['num_attention_heads'],'kv_heads':a.get('num_query_groups'),'ffn_hidden':a.get('ffn_hidden_size'),'vocab':None,'seq_len':sl,'notes':"The recipe's ARGS give the architecture; meshplan's preset of the model has the same dimensions."}
    rec['hardware']={'gpu':gpu,'count':gpus,'peak_tflops_per_gpu_used_by_authors':None,'precision':prec,'notes':"The README names the GPU only (the recipe's NVTE_CUDA_ARCHS and container); the system, its network and host are not printed."}
    rec['parallel']={'tp':tp,'pp':pp,'dp':dp,'cp':cp,'ep':ep,'etp':etp,'vpp':None,'model_parallel_size':None,'zero_stage':None,'fsdp':None,'recompute':None,'sequence_parallel':None,
       'notes':"TP/PP/EP/CP/ETP as printed; DP = GPUs / (TP x PP x CP). Not printed: the interleave degree, recomputation, the distributed optimizer and sequence parallelism (every recipe's ARGS set use_distributed_optimizer and sequence_parallel: the stack's ZeRO-1 and SP); each recipe's settings in presets/launches/megatron-lm-moe-recipes.json"}
    rec['microbatch']=mbs; rec['global_batch']=gbs; rec['global_batch_tokens']=gbs*sl
    rec['measured']={'tflops_per_gpu':tf,'mfu_pct':None,'hfu_pct':None,'pct_of_peak':None,'aggregate_pflops':None,'iteration_time_s':None,'tokens_per_s':None,'tokens_per_s_per_gpu':None,'memory_gib':None,'training_days':None,
       'other':{'model_tflops_per_gpu_as_printed':'%g'%tf,'tflops_definition':"'Median TFLOP/s/GPU' of Megatron-LM's log, its throughput counted by megatron/training/training.py num_floating_point_operations at the same commit (the causal attention's s^2 half; MLA and MTP counted): the stack megatron-lm-2026's flop_count megatron-2025"}}
    rec['derived_fields']=['parallel.dp']
    rec['confidence']='high'
    rec['notes']="Megatron-LM's self-contained MoE recipes: the table prints the median model TFLOP/s per GPU of each recipe's run; the YAML beside it gives every argument, the container and the Transformer Engine. An open pull request (NVIDIA/Megatron-LM #5728, 7146484607, 2026-07-09) re-measured the Qwen3 rows through Megatron-Bridge's matching recipes (Qwen3-235B-A22B H100 214.3 -> 302.0, GB200 full CG 1159.5 -> 1208.3, partial 1018 -> 876.2, GB300 1323.1 -> 1396.1; Qwen3-30B-A3B H100 FP8 232.4 -> 242.9, BF16 234.1 -> 240.5, GB200 BF16 528 -> 504.2, MXFP8 partial 514 -> 480.3, paged 646.8 -> 598.1); not recorded: another framework's runs, unmerged."
    records.append(rec)
json.dump(records, open(args.out_dir+'/tests/data/validation/megatron_lm_moe_recipes.json','w'), indent=1)
launch=collections.OrderedDict()
launch['source']="Megatron-LM examples/moe_recipes/*.yaml at %s (dev branch, 2026-08-11; github.com/NVIDIA/Megatron-LM): each recipe's ARGS (pretrain_gpt.py arguments) and DEPENDENCIES, read from a fetched mirror with git show"%C
launch['notes']="One entry per README row (tests/data/validation/megatron_lm_moe_recipes.json), every field from the YAML key its evidence names; what the ARGS leave is Megatron-LM's default at the same commit (megatron/training/arguments.py): no recomputation, no CUDA graphs, the DDP overlaps off, gradients in fp32. cuda_graph 'transformer_engine: ...' is Transformer Engine's partial capture (cuda_graph_impl transformer_engine, or the older external_cuda_graph flag), 'local: full_iteration' the whole iteration captured. The flex dispatcher (HybridEP, DeepEP) is said and costed as alltoall, as for Megatron-Bridge's runs (docs/validation.md)."
launch['runs']=runs
json.dump(launch, open(args.out_dir+'/presets/launches/megatron-lm-moe-recipes.json','w'), indent=1)
print(len(records), 'records')
