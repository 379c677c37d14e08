/* zstd level probe for the event log (docs/event-log.md, "Compression level").
 * Compresses an NDJSON file in frames of FRAME_KIB with one reused context, like the log writer,
 * and prints the ratio and the single-thread CPU throughput (best of 5, CPU time, so other load on
 * the machine matters less than for wall-clock figures).
 * Build:  gcc -O2 -o /tmp/zstd-levels bench/eventlog/zstd-levels.c -lzstd -lz
 * Input:  zstdcat <data>/segments/node-1/*.seg > /tmp/env.ndjson   (e.g. after `bench segments`)
 * Usage:  /tmp/zstd-levels FILE FRAME_KIB LEVEL [hashLog chainLog minMatch windowLog strategy literalMode targetLength]
 *         (0 keeps the level's default; literalMode 1 = Huffman literals, as the log sets for levels < 1)
 */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double cpu(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  FILE*f=fopen(argv[1],"rb");fseek(f,0,SEEK_END);long n=ftell(f);fseek(f,0,SEEK_SET);char*in=malloc(n);fread(in,1,n,f);
  size_t frame=atoi(argv[2])*1024; int level=atoi(argv[3]);
  int hlog=argc>4?atoi(argv[4]):0, clog=argc>5?atoi(argv[5]):0, mml=argc>6?atoi(argv[6]):0, wlog=argc>7?atoi(argv[7]):0, strat=argc>8?atoi(argv[8]):0, lit=argc>9?atoi(argv[9]):0, tlen=argc>10?atoi(argv[10]):-1;
  ZSTD_CCtx*c=ZSTD_createCCtx(); size_t cap=ZSTD_compressBound(frame); char*out=malloc(cap);
  double best=1e9; size_t total=0;
  for(int rep=0;rep<5;rep++){ total=0; double t0=cpu();
    for(long off=0;off+frame<=n;off+=frame){
      ZSTD_CCtx_reset(c,ZSTD_reset_session_and_parameters);
      ZSTD_CCtx_setParameter(c,ZSTD_c_compressionLevel,level);
      if(hlog)ZSTD_CCtx_setParameter(c,ZSTD_c_hashLog,hlog);
      if(clog)ZSTD_CCtx_setParameter(c,ZSTD_c_chainLog,clog);
      if(mml)ZSTD_CCtx_setParameter(c,ZSTD_c_minMatch,mml);
      if(wlog)ZSTD_CCtx_setParameter(c,ZSTD_c_windowLog,wlog);
      if(strat)ZSTD_CCtx_setParameter(c,ZSTD_c_strategy,strat);
      if(lit)ZSTD_CCtx_setParameter(c,ZSTD_c_literalCompressionMode,lit);
      if(tlen>=0)ZSTD_CCtx_setParameter(c,ZSTD_c_targetLength,tlen);
      size_t r=ZSTD_compress2(c,out,cap,in+off,frame); if(ZSTD_isError(r)){printf("err %s\n",ZSTD_getErrorName(r));return 1;} total+=r; }
    double t=cpu()-t0; if(t<best)best=t; }
  long used=(n/frame)*frame;
  printf("frame=%zuK level=%d hlog=%d clog=%d mml=%d wlog=%d strat=%d lit=%d tlen=%d: ratio %.3f, %.0f MB/s cpu, %.2f us/event(521B)\n",frame/1024,level,hlog,clog,mml,wlog,strat,lit,tlen,(double)used/total,used/best/1e6,best/(used/521.0)*1e6);
}
