internal import CLibPQ
