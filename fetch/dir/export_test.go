package dir

// SetBeforeOpen installs a hook run between listing a file and opening it,
// so a test can swap the file at that exact moment.
func (f *Fetcher) SetBeforeOpen(hook func(rel string)) { f.beforeOpen = hook }

// ExcludePattern is excludePattern, for tests.
var ExcludePattern = excludePattern
