package registry

import "syscall"

// noFollow makes opening a file that was swapped for a symbolic link after
// the walk saw it fail instead of following it.
const noFollow = syscall.O_NOFOLLOW
