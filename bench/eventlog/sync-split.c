/* Sync split probe: appends REC-byte records to a 64 MiB file preallocated with written zeros (as
 * the log's open segment is) and syncs each, N times, in one of three ways, printing the mean,
 * p50 and p90 of a whole append and of its write part:
 *   buffered  pwrite + fdatasync (what the log does);
 *   direct    O_DIRECT write of the 4 KiB blocks the record covers (the last partial block kept in
 *             memory and written again, zeros after the record) + fdatasync;
 *   split     pwrite + sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER), so the write part is the data
 *             write's round trip to the disk, then fdatasync (what remains: the cache flush).
 * Build: gcc -O2 -o /tmp/sync-split bench/eventlog/sync-split.c
 * Usage: /tmp/sync-split buffered|direct|split N REC   (writes and keeps /tmp/sync-split.seg; rm it)
 * Measured here (2026-12-03 18:40 UTC, ext4 without a journal on Firecracker's virtio disk, write-back
 * cache, no FUA; N 2000, REC 2500, twice each): buffered mean 140 and 144 us; direct 131 and 138;
 * split 133 and 161, of which the data write 71 and 85 us. A sync is two round trips to the host of
 * ~65-70 us each (the data write, then the flush); O_DIRECT saves under 10 % of it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  if(argc<4){fprintf(stderr,"usage: sync-split buffered|direct|split N REC\n");return 2;}
  int n=atoi(argv[2]); int rec=atoi(argv[3]); const char*mode=argv[1];
  const char*path="/tmp/sync-split.seg"; size_t size=64<<20;
  int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  char*z=calloc(1,1<<20); for(size_t o=0;o<size;o+=1<<20) pwrite(fd,z,1<<20,o); fdatasync(fd);
  int dfd=open(path,O_RDWR|O_DIRECT);
  char*buf=NULL; if(posix_memalign((void**)&buf,4096,1<<20)) return 1;
  char*data=malloc(rec); for(int i=0;i<rec;i++) data[i]='a'+(i*7)%26;
  double*t=malloc(n*sizeof(double)),*w=malloc(n*sizeof(double)); off_t off=0; 
  for(int i=0;i<n;i++){
    double s=now();
    if(mode[0]=='b'){ pwrite(fd,data,rec,off); double m=now(); w[i]=m-s; fdatasync(fd);} 
    else if(mode[0]=='s'){ pwrite(fd,data,rec,off); sync_file_range(fd,off,rec,SYNC_FILE_RANGE_WAIT_BEFORE|SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER); double m=now(); w[i]=m-s; fdatasync(fd);} 
    else { /* direct: rewrite from the block holding off */
      off_t start=off&~4095L; size_t pre=off-start; memcpy(buf+pre,data,rec); size_t len=(pre+rec+4095)&~4095UL; memset(buf+pre+rec,0,len-pre-rec);
      pwrite(dfd,buf,len,start); double m=now(); w[i]=m-s; fdatasync(dfd);
      /* keep the tail block's bytes at the start of buf for next time */
      off_t nend=off+rec; off_t nstart=nend&~4095L; memmove(buf,buf+(nstart-start),nend-nstart);
    }
    t[i]=now()-s; off+=rec;
  }
  qsort(t,n,sizeof(double),cmp); double sum=0,ws=0; for(int i=0;i<n;i++){sum+=t[i];ws+=w[i];}
  printf("%s rec=%d: mean %.0f p50 %.0f p90 %.0f us; write part mean %.0f us\n",mode,rec,sum/n,t[n/2],t[n*9/10],ws/n);
  return 0;}
