"""ISO/IEC 15693 inventory anti-collision simulator + policies.
Costs in carrier cycles (1/fc); /13560 -> ms.  Run: python3 sim.py"""
import math, random, statistics, sys
from core import ANS, EMP, EOF_, req, R16, R1, ideal, FC

class Reader:
    def __init__(s, uids): s.uids=uids; s.t=0; s.found=set(); s.log=[]
    def _grp(s, tags, m):
        g=[[] for _ in range(16)]
        for u in tags: g[(u>>m)&15].append(u)
        return g
    def inv16(s, v, m, tags):
        """16-slot inventory with mask (v,m). tags = the tags matching the mask (sim bookkeeping).
        returns list of 16 (outcome, taglist) ; outcome 0 empty 1 single 2 collision"""
        assert m<=60
        s.t+=R16(m); out=[]
        for g in s._grp(tags,m):
            if not g: s.t+=EMP; out.append((0,g))
            else:
                s.t+=ANS; out.append((1 if len(g)==1 else 2, g))
                if len(g)==1: s.found.add(g[0])
        return out
    def inv16a(s, v, m, tags, stop):
        """16-slot round that the reader may abort after any slot by sending the next request's SOF
        instead of an EOF (ISO 15693-3: a new SOF ends inventory processing). stop(i,e,s,c)->bool.
        returns list of (outcome,taglist) for visited slots only."""
        assert m<=60
        s.t+=req(m); out=[]; e=sg=c=0; g=s._grp(tags,m)
        for i in range(16):
            if i: s.t+=EOF_
            gi=g[i]
            if not gi: s.t+=EMP; out.append((0,gi)); e+=1
            else:
                s.t+=ANS; out.append((1 if len(gi)==1 else 2, gi))
                if len(gi)==1: s.found.add(gi[0]); sg+=1
                else: c+=1
            if i<15 and stop(i,e,sg,c): break
        return out
    def inv1(s, v, m, tags):
        assert m<=64
        s.t+=R1(m)
        if not tags: s.t+=EMP; return 0
        s.t+=ANS
        if len(tags)==1: s.found.add(tags[0]); return 1
        return 2

def sub(tags, v, m):
    mk=(1<<m)-1; return [u for u in tags if u&mk==v]

# ---------------- current algorithm ----------------
def current(rd, tags):
    r=rd.inv1(0,0,tags)
    if r<2: return
    stack=[(0,0,tags)]
    while stack:
        v,m,t=stack.pop()
        res=rd.inv16(v,m,t)
        for i,(o,g) in enumerate(res):
            if o==2: stack.append((v|(i<<m), m+4, g))

# ---------------- proposed policy ----------------
# action thresholds on estimated tag count k of a collided subtree (from genie table, see tables.py)
# k<=KBIN -> one-slot binary split ; else b extra mask bits (2^b sixteen-slot rounds) with b = first i s.t. k <= KB[i]
P=dict(KBIN=0.0, KB=[10,20,40,80,160,1e9], ROOTGUESS=16.0, ALLC=3.0, W0=1.0, ABORT=1, AB_MIN=4, AB_FRAC=0.75)

def tp_mean(mu):
    """E[X | X>=2], X~Poisson(mu)"""
    if mu<1e-6: return 2.0
    e=math.exp(-mu); d=1-e-mu*e
    if d<1e-12: return 2+mu/3
    return (mu-mu*e)/d

def est_mu(L,e,s,c):
    """Vogt-style least-distance estimate of per-cell Poisson mean from (e,s,c) in L cells.
    Returns None if c==L (unbounded)."""
    if c==L: return None
    best=None
    for i in range(1,4000):
        mu=i*0.005
        E=math.exp(-mu); pe=L*E; ps=L*mu*E; pc=L-pe-ps
        d=(pe-e)**2+(ps-s)**2+(pc-c)**2
        if best is None or d<best[0]: best=(d,mu)
    return best[1]

def abort_rule(i,e,s,c):
    n=i+1
    if n<P['AB_MIN']: return False
    return c>=P['AB_FRAC']*n

def choose_unknown(mu, m):
    """b for a frame over a node of unknown status with Poisson(mu) tags"""
    b=0
    while b<5 and mu>P['KB'][b]: b+=1
    return max(0,min(b,60-m))

def choose(k, m):
    if k<=P['KBIN'] or m>=60: return -1
    for b,th in enumerate(P['KB']):
        if k<=th: return max(0,min(b,60-m))
    return min(len(P['KB'])-1,60-m)

def resolve(rd, v, m, tags, khat):
    """resolve a subtree known to collide (>=2 tags), estimated count khat. returns #tags found in it"""
    a=choose(khat, m)
    if a<0: return binsplit(rd, v, m, tags, khat)
    return frames(rd, v, m, tags, a, khat)

def frames(rd, v, m, tags, b, khat):
    """2^b sixteen-slot rounds at mask length m+b over subtree (v,m)."""
    L=16<<b; found=0
    results=[]  # list of (v', m', taglist) collided cells
    unknown=[]  # cells skipped by an aborted round
    e=s=c=0; nrounds=1<<b
    for j in range(nrounds):
        vv=v|(j<<m); mm=m+b
        # trick: if all previous rounds empty and this is the last, we'd still need its slots -> just run it
        tt=sub(tags,vv,mm) if b else tags
        if P['ABORT']:
            res=rd.inv16a(vv,mm,tt,abort_rule)
        else:
            res=rd.inv16(vv,mm,tt)
        for i,(o,g) in enumerate(res):
            if o==0: e+=1
            elif o==1: s+=1
            else: c+=1; results.append((vv|(i<<mm), mm+4, g))
        if len(res)<16:   # aborted: remaining cells of this round are unknown-status nodes
            L-=16-len(res)
            for i in range(len(res),16):
                unknown.append((vv|(i<<mm), mm+4, sub(tt,vv|(i<<mm),mm+4)))
    found=s
    if not results and not unknown: return found
    mu=est_mu(L,e,s,c)
    if unknown:   # cells never observed: Poisson(mu) unknown-status, go straight to a frame sized for mu
        muu=mu if mu is not None else max(P['ALLC'], khat/(16<<b) if khat<1e8 else P['ROOTGUESS'])
        for (vv,mm,g) in unknown:
            bb=choose_unknown(muu, mm)
            found+=frames(rd, vv, mm, g, bb, muu*(16<<bb)/16.0*16/(16<<bb) if False else muu)
    if not results: return found
    if mu is None:
        # all cells collided: estimate unbounded -> use parent estimate (or ROOTGUESS at root), at least ALLC
        kest=P['ROOTGUESS'] if khat>=1e8 else max(khat/L, P['ALLC'])
        w0=P['W0']*0.5
    else:
        kest=tp_mean(mu); w0=P['W0']
    # blend prior estimate with exact counts of siblings resolved so far
    tot=0.0; n=0
    for (vv,mm,g) in results:
        ke=(w0*kest+tot)/(w0+n) if n else kest
        f=resolve(rd, vv, mm, g, ke)
        tot+=f; n+=1; found+=f
    return found

def binsplit(rd, v, m, tags, khat):
    """one-slot binary query tree on a collided subtree; 0-child empty => 1-child collided (no query)."""
    if m>=64: return 0
    t0=sub(tags,v,m+1); v1=v|(1<<m); t1=sub(tags,v1,m+1)
    r=rd.inv1(v,m+1,t0)
    if r==0:
        return resolve(rd, v1, m+1, t1, khat)
    found=0
    if r==1: found+=1
    else: found+=resolve(rd, v, m+1, t0, max(2.0,khat/2))
    # 1-child: unknown (could be empty/single/coll)
    r1=rd.inv1(v1,m+1,t1)
    if r1==1: found+=1
    elif r1==2: found+=resolve(rd, v1, m+1, t1, max(2.0,khat/2))
    return found

def proposed(rd, tags):
    r=rd.inv1(0,0,tags)
    if r<2: return
    resolve_root(rd, tags)

def resolve_root(rd, tags):
    frames(rd, 0, 0, tags, 0, 1e9)

# ---------------- harness ----------------
def gen(N, kind, rng):
    if kind=='rand':
        s=set()
        while len(s)<N: s.add((0xE0<<56)|rng.getrandbits(56))
        return list(s)
    base=(0xE0<<56)|rng.getrandbits(48)
    return [base+i for i in range(N)]

def run(alg, N, kind, seed):
    rng=random.Random(seed*1000003+N)
    tags=gen(N,kind,rng)
    rd=Reader(tags); alg(rd,tags)
    assert len(rd.found)==N, (N,len(rd.found))
    return rd.t

def stats(alg, N, kind, seeds=200):
    ts=[run(alg,N,kind,s) for s in range(seeds)]
    med=statistics.median(ts)
    return med/FC, (med/ideal(N) if N else float('nan'))

if __name__=='__main__':
    seeds=int(sys.argv[1]) if len(sys.argv)>1 else 200
    print("N | cur rand ratio | cur seq ratio | cur ms | new rand ratio | new seq ratio | new ms")
    for N in [0,1,2,5,16,50,100,200,300]:
        row=[N]
        for alg in (current, proposed):
            msr,rr=stats(alg,N,'rand',seeds); mss,rs=stats(alg,N,'seq',seeds)
            row+= [f"{rr:.3f}",f"{rs:.3f}",f"{msr:.1f}"]
        print(' | '.join(map(str,row)))
