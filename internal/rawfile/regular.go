package rawfile

import "errors"

// ErrNotRegular is ReadRegular's error for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is ReadRegular's error for a file longer than its limit.
var ErrTooLarge = errors.New("file too large")

// Info is what ReadRegularInfo learnt of the file it read, from the descriptor it
// read it through.
type Info struct {
	// Links is the file's number of names (hard links); 0 where it is not known.
	Links uint64
}
