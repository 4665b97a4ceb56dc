import math
from functools import lru_cache
FC=13560.0  # cycles per ms
ANS=4352+(2048+12*4096+2048)+4192   # =61792 (brief's 59,744 is an addition slip; its ms figures use 61792)
EMP=4384+2048                          # 6432
EOF_=512
def req(m): return 1024+(5+(m+7)//8)*4096+512
def R16(m): return req(m)+15*EOF_
def R1(m): return req(m)
def ideal(N):
    if N==0: return 0
    a=N*(R1(0)+ANS)
    full,r=divmod(N,16)
    b=full*(R16(0)+16*ANS)+((R16(0)+r*ANS+(16-r)*EMP) if r else 0)
    return min(a,b)
