package azure

import (
	"errors"
	"io/fs"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// isNotFound reports whether err says the blob or its container is missing.
func isNotFound(err error) bool {
	return bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound, bloberror.ResourceNotFound)
}

// wrap turns an SDK error into one naming the operation and the location,
// with the secrets of the properties and every URL query string masked
// (shared/redact). It unwraps to the sentinels callers branch on
// (fs.ErrNotExist and the context errors), not to the SDK's error, whose
// text carries request URLs that may hold a SAS token.
func (s *Store) wrap(op, location string, err error) error {
	if err == nil {
		return nil
	}
	var kinds []error
	if isNotFound(err) {
		kinds = append(kinds, fs.ErrNotExist)
	}
	var detail string
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		// The full text is a multi-line dump of the request and the
		// response body; the status and the code are what an operator needs.
		detail = "HTTP " + strconv.Itoa(re.StatusCode)
		if re.ErrorCode != "" {
			detail += " " + re.ErrorCode
		}
	} else {
		detail = err.Error()
	}
	return s.red.Wrap(err, "azure "+op+" "+location+": "+detail, kinds...)
}
