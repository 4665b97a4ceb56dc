# Clairvoyant-count DP: node at depth m holding exactly k>=2 tags (its collision already paid).
import sys, math
from functools import lru_cache
from scipy.stats import binom
from core import *
sys.setrecursionlimit(100000)
BMAX=5
def pmf(k,p): return binom.pmf(range(k+1),k,p)

@lru_cache(None)
def G(k,m):
    return min(acts(k,m).values())

@lru_cache(None)
def acts(k,m):
    out={}
    if m>=56:  # deep: just binary (never reached for real k with random uids)
        return {'bin':k*(R1(m)+ANS)}
    for b in range(BMAX+1):
        mm=m+b
        if mm>60: break
        L=16<<b; P=pmf(k,1.0/L)
        cell=P[0]*EMP+P[1]*ANS
        for j in range(2,k+1):
            if P[j]<1e-13: continue
            cell+=P[j]*(ANS+G(j,mm+4)) if j<k else P[j]*(ANS+G(j,mm+4))
        # self-loop j==k: G(k,mm+4) deeper, fine
        out['f%d'%b]=(1<<b)*R16(mm)+L*cell
    # binary 1-slot: query 0-child (genie skips queries whose answer it knows, except singles must be read)
    P=pmf(k,0.5); c=R1(m+1); tot=0
    for j in range(k+1):
        x=c+(EMP if j==0 else ANS)
        if j>=2: x+=G(j,m+1)
        r=k-j
        if r==1: x+=R1(m+1)+ANS
        elif r>=2: x+=G(r,m+1)
        tot+=P[j]*x
    out['bin']=tot
    return out

def top(N, probe=True):
    """genie total cost from scratch with N known; with probe = must start by 1-slot mask0"""
    if N==0: return R1(0)+EMP if probe else 0
    if N==1: return R1(0)+ANS
    return (R1(0)+ANS if probe else 0)+G(N,0)
if __name__=='__main__':
    for k in [2,3,4,5,6,8,10,12,16,20,30,50,100,200]:
        a=acts(k,4); best=min(a,key=a.get)
        print(k,best,{x:round(v/ANS,2) for x,v in a.items()})
    for N in [2,5,16,50,100,200,300]:
        print(N, round(top(N,False)/ideal(N),3), round(top(N,True)/ideal(N),3))
