package rolestatus

// Uploader is what the uploader tells of each dataset.
type Uploader struct {
	// Datasets holds each configured dataset, by name.
	Datasets map[string]UploaderDataset `json:"datasets"`
}

// UploaderDataset is one dataset as the uploader sees it.
type UploaderDataset struct {
	// PendingFiles counts the ready files waiting for upload as of the
	// last scan, UploadingFiles those being uploaded now, RetryingFiles
	// those waiting to be retried after a failure.
	PendingFiles   float64 `json:"pending_files"`
	UploadingFiles int     `json:"uploading_files"`
	RetryingFiles  int     `json:"retrying_files"`
	// FilesUploaded, BytesUploaded and UploadFailures count since start.
	FilesUploaded  float64 `json:"files_uploaded"`
	BytesUploaded  float64 `json:"bytes_uploaded"`
	UploadFailures float64 `json:"upload_failures"`
}
