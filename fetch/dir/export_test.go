package dir

import "time"

// SetBeforeOpen installs a hook run between listing a file and opening it,
// so a test can swap the file at that exact moment.
func (f *Fetcher) SetBeforeOpen(hook func(rel string)) { f.beforeOpen = hook }

// ExcludePattern is excludePattern, for tests.
var ExcludePattern = excludePattern

// SetNow sets the time runs start at (files dated a while before it are
// old enough for their status to be trusted).
func (f *Fetcher) SetNow(now func() time.Time) { f.now = now }
