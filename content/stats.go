package content

// Stats is what the database says about field migrations, for metrics.
type Stats struct {
	// Runs counts migration runs by status.
	Runs map[RunStatus]int64 `json:"runs"`
	// Converted, Restored and Batches are summed over every run ever
	// started: documents converted, documents an abort restored, and
	// batches committed.
	Converted int64 `json:"converted"`
	Restored  int64 `json:"restored"`
	Batches   int64 `json:"batches"`
	// Open are the runs that still hold their field (running, failed,
	// aborting), for progress.
	Open []Run `json:"open"`
}

// RunStatuses are every run status, in the order a run can reach them.
var RunStatuses = []RunStatus{RunRunning, RunFailed, RunAborting, RunDone, RunAborted}
