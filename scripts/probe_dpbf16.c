// probe_dpbf16.c: what vdpbf16ps (AVX512_BF16) does on this CPU, one lane at a time, against
// the sequentially rounded fmaf-style chain (acc + odd product, then + even product, gradual
// underflow): separate rounding, pair order, subnormal inputs / products / sums, NaN. SAME or
// DIFF per case; the findings are in docs/results/speed.md. Not part of the build or of make test.
//   gcc -O1 -o /tmp/probe scripts/probe_dpbf16.c -lm && /tmp/probe
#pragma GCC target("avx512f,avx512bf16,avx512vl")
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
static float f(uint32_t u){float x;memcpy(&x,&u,4);return x;}
static uint32_t b(float x){uint32_t u;memcpy(&u,&x,4);return u;}
static uint16_t bf(float x){return (uint16_t)(b(x)>>16);}
// one lane: acc + a1*b1 (odd) then + a0*b0 (even)
static float dp(float acc, float a0, float b0, float a1, float b1){
  __m512 s=_mm512_set1_ps(acc);
  uint32_t pa=(uint32_t)bf(a0)|((uint32_t)bf(a1)<<16), pb=(uint32_t)bf(b0)|((uint32_t)bf(b1)<<16);
  __m512bh A=(__m512bh)_mm512_set1_epi32((int)pa), B=(__m512bh)_mm512_set1_epi32((int)pb);
  __m512 r=_mm512_dpbf16_ps(s,A,B); float o[16]; _mm512_storeu_ps(o,r); return o[0];}
static void show(const char*n,float got,float want){printf("%-40s got %08x (%g) seq-rounded %08x (%g) %s\n",n,b(got),got,b(want),want,b(got)==b(want)?"SAME":"DIFF");}
int main(){
  // 1. separate rounding: acc=1, odd=2^-24 (half ulp), even=2^-24: sequential: 1+2^-24 -> 1 (tie to even), +2^-24 -> 1. fused: 1+2^-23.
  float e=ldexpf(1,-24);
  show("1 + 2^-24(odd) + 2^-24(even)", dp(1,1,e,1,e), (1.0f+e)+e);
  // order: acc=0: odd= 1, even = 2^-30: (0+1)+2^-30 = 1 ; other order same. use cancellation: acc=1, odd=-1, even=2^-30 -> (1-1)+2^-30=2^-30; if even first: (1+2^-30)-1 = 0
  float t=ldexpf(1,-30);
  show("1 + (-1)(odd) + 2^-30(even)", dp(1,t,1,-1,1), (1.0f+(-1.0f))+t);
  show("1 + 2^-30(odd) + (-1)(even) [odd-first]", dp(1,-1,1,t,1), (1.0f+t)+(-1.0f));
  // subnormal input: a=2^-130 (bf16 subnormal? bf16 has same exponent range; 2^-130 is subnormal), b=1
  float sub=ldexpf(1,-130);
  show("0 + sub*1(odd) [DAZ?]", dp(0,0,0,sub,1), sub);
  // product underflow to subnormal: 2^-70*2^-60 = 2^-130
  show("0 + 2^-70*2^-60 (odd) [FTZ product?]", dp(0,0,0,ldexpf(1,-70),ldexpf(1,-60)), ldexpf(1,-130));
  // sum result subnormal: acc=2^-125, product=-1.5*2^-125*... acc + p = 2^-127 (subnormal)
  show("2^-125 + (-0.75*2^-125)*1 [FTZ sum?]", dp(ldexpf(1,-125),0,0,-0.75f*ldexpf(1,-125),1), ldexpf(1,-125)-0.75f*ldexpf(1,-125));
  // acc subnormal input
  show("acc=2^-130 + 0 [DAZ acc?]", dp(ldexpf(1,-130),0,0,0,0), ldexpf(1,-130));
  show("acc=2^-130 + 2^-126*1", dp(ldexpf(1,-130),0,0,ldexpf(1,-126),1), ldexpf(1,-130)+ldexpf(1,-126));
  // sign of flushed zero: -2^-70*2^-60
  show("0 + (-2^-70)*2^-60 sign", dp(0,0,0,-ldexpf(1,-70),ldexpf(1,-60)), -0.0f+0.0f);
  show("-0 + 0*0 sign", dp(-0.0f,0,0,0,0), -0.0f+0.0f*0.0f);
  // NaN, inf
  show("inf*0", dp(0,0,0,INFINITY,0), NAN);
  // rounding: large products exact? 255/128 * 255/128
  float a=f(0x3fff0000), c=f(0x3fff0000);
  show("1 + a*a (exact product)", dp(1,0,0,a,c), 1.0f+a*c);
  show("rounding mode: 1 + 3*2^-25", dp(1,0,0,3*ldexpf(1,-25),1), 1.0f+3*ldexpf(1,-25));
  // overflow
  show("-1 + 1*1 -> +0", dp(-1.0f,0,0,1.0f,1.0f), 0.0f);
  show("-2^-120 + (-2^-121)... normal neg", dp(-ldexpf(1,-120),0,0,-ldexpf(1,-121),1), -ldexpf(1,-120)-ldexpf(1,-121));
  show("+0 + (-2^-70*2^-60)(odd) + (-1*0)(even)", dp(0.0f,-1.0f,0.0f,-ldexpf(1,-70),ldexpf(1,-60)), 0.0f);
  show("-0 + (-1*0) + (-1*0)", dp(-0.0f,-1.0f,0.0f,-1.0f,0.0f), -0.0f);
  show("2^-120 + 2^-70*2^-60 (is the product flushed?)", dp(ldexpf(1,-120),0,0,ldexpf(1,-70),ldexpf(1,-60)), ldexpf(1,-120)+ldexpf(1,-130));
  show("2^-126 + (-2^-70*2^-60)", dp(ldexpf(1,-126),0,0,-ldexpf(1,-70),ldexpf(1,-60)), ldexpf(1,-126)-ldexpf(1,-130));
  show("max + max*2", dp(f(0x7f7f0000),0,0,f(0x7f7f0000),2), f(0x7f7f0000)+f(0x7f7f0000)*2);
  // tininess before or after rounding: acc = 2^-126 + 2^-149, product -m * 2^-149; the
  // "want" column is the gradual-underflow fmaf, DIFF where the unbounded rounding is tiny
  static const float ms[] = {1.125f, 1.25f, 1.375f, 1.5f, 1.625f};
  for (int i = 0; i < 5; i++) {
    char n[64];
    snprintf(n, sizeof n, "2^-126+2^-149 - %.3f*2^-149 [tininess]", ms[i]);
    show(n, dp(ldexpf(1,-126)+ldexpf(1,-149),0,0,-ms[i]*ldexpf(1,-75),ldexpf(1,-74)),
         fmaf(-ms[i]*ldexpf(1,-75),ldexpf(1,-74),ldexpf(1,-126)+ldexpf(1,-149)));
  }
  // a tiny partial sum inside the pair is flushed before the even product is added
  show("2^-125 - 0.75*2^-125(odd) + 2^-126(even) [pair ftz]", dp(ldexpf(1,-125),ldexpf(1,-126),1,-0.75f*ldexpf(1,-125),1),
       ldexpf(1,-126));
}
