// glibc's <malloc.h>, for mallinfo2(): Swift's Glibc module does not import it.
#include <malloc.h>
