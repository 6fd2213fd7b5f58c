package imageuse

import (
	"fmt"
	"time"
)

// Decide says whether prune keeps an image that may go, and the reason it prints:
// why says why the image may go ("the default image of devsandbox 1.2, this is 1.3"),
// last is its last recorded use (zero: none), created when the engine says it was made
// (zero: unknown), maxAge prune's --days. It goes only when its last use is older than
// maxAge, or, with no use recorded, when the image itself is (a use before the records
// existed, or by a run with another state directory, is not known: the image's age
// bounds it). A record in the future (the clock went back) counts as recent. Whether
// a container uses it is the caller's to ask: that keeps it in any case.
func Decide(why string, last, created, now time.Time, maxAge time.Duration) (keep bool, reason string) {
	switch {
	case !last.IsZero() && now.Sub(last) <= maxAge:
		return true, fmt.Sprintf("%s, but a run used it %s", why, ago(now.Sub(last)))
	case !last.IsZero():
		return false, fmt.Sprintf("%s, and no run used it for %s", why, span(now.Sub(last)))
	case created.IsZero():
		return true, why + ", but no use of it is recorded and the engine does not say when it was made"
	case now.Sub(created) <= maxAge:
		return true, fmt.Sprintf("%s, but it was made %s (no use of it is recorded yet)", why, ago(now.Sub(created)))
	}
	return false, fmt.Sprintf("%s, no use of it is recorded and it was made %s", why, ago(now.Sub(created)))
}

// ago is d as "2 days ago", "5 hours ago", "just now".
func ago(d time.Duration) string {
	if d < time.Minute {
		return "just now"
	}
	return span(d) + " ago"
}

// span is d in its largest whole unit: days, hours or minutes.
func span(d time.Duration) string {
	n, unit := int64(d/time.Minute), "minute"
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d >= 24*time.Hour:
		n, unit = int64(d/(24*time.Hour)), "day"
	case d >= time.Hour:
		n, unit = int64(d/time.Hour), "hour"
	}
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
