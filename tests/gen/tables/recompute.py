# recompute.py: prints every number of the fixture tables (tests/data/tables/expected/) recomputed
# from the JSON inputs with plain Python, independently of the C code: the aid for checking the
# expected files by hand (tests/test_tables.sh). Run from the repository root.
import json
I='tests/data/tables/inputs/'
L=lambda p: json.load(open(I+p))
d=L('diagnose.json'); t1=d['table1']
print('T1', round(t1['rho_K'],2), round(t1['T_KQ'],2), round(t1['jaccard'],3), t1['gate'], t1['alpha'])
for l in d['table8']: print('T8', l['layer'], round(l['MaxAbs_K'],1), round(l['P99_K'],1), round(l['rho_K'],1), round(l['max_scale'],2), round(l['min_scale'],2))
s=L('run-ablation/summary.json')
for t in ['arc_challenge','truthfulqa_mc1','mmlu','hellaswag']:
    T=s['tasks'][t]; n=T['n']
    for m in ['direct','direct+qmean','direct+qmean+sqk','direct+qmean+preorder','hifa4']:
        v=T['vs_reference'][m]
        print('T3/6/7', t, n, m, 'flips', v['flips'], 'pct %.2f'%(100*v['flips']/n), 'hurts', v['hurts'], 'helps', v['helps'], 'acc %.4f'%T['modes'][m]['acc'])
    print('   bf16 acc %.4f'%T['modes']['bf16']['acc'])
gaps=[(s['tasks'][t]['modes']['hifa4']['acc']-s['tasks'][t]['modes']['bf16']['acc'], s['tasks'][t]['n']) for t in ['arc_challenge','truthfulqa_mc1','mmlu','hellaswag']]
print('T5 davg %.2f pp'%(100*sum(g for g,_ in gaps)/4), 'dw %.2f pp'%(100*sum(g*n for g,n in gaps)/sum(n for _,n in gaps)))
for a in ['rms','mean','p99']:
    s=L('run-agg-%s/summary.json'%a); r=L('run-agg-%s/run.json'%a)
    print('T2', a, r['scales_calibration'], {t: round(s['tasks'][t]['modes']['hifa4'].get('acc',0),3) for t in ['arc_challenge','hellaswag']}, 'ppl %.3g'%s['tasks']['ppl']['modes']['hifa4']['ppl'], 'bf16 ppl %.3g'%s['tasks']['ppl']['modes']['bf16']['ppl'], 'direct ppl %.3g'%s['tasks']['ppl']['modes']['direct']['ppl'])
s=L('run-niah/summary.json')
for m in ['bf16','direct','hifa4']:
    sub=s['tasks']['niah']['modes'][m]['subjects']
    for T in (256,512):
        c=[x for k,x in sub.items() if k.startswith('T%d/'%T)]
        print('T4 niah', m, T, '%.0f%%'%(100*sum(x['acc']*x['n'] for x in c)/sum(x['n'] for x in c)))
tr=L('trace.json')
for m in tr['modes']:
    for c in m['inputs']:
        print('T4 trace', m['mode'], c['ctx'], '%.1f%%'%(100*sum(l['rel_l2'] for l in c['layers'])/len(c['layers'])), 'kmax %.2f'%c['k_maxabs'])
for f in ['cost-tiny.json','cost-qwen3-8b-shape.json']:
    for m in L(f)['modes']: print('T10', f, m['mode'], {k:(round(v,2) if isinstance(v,float) else v) for k,v in m['table10'].items()})
