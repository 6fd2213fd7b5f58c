package rawfile

import "errors"

// ErrNotRegular is ReadRegular's error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is ReadRegular's error for a file longer than its limit.
var ErrTooLarge = errors.New("file too large")
