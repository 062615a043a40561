package azure

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// TestWrapMasksSecrets checks that the store's errors hide the SAS token
// and the account key of its properties, keep the sentinels callers branch
// on, and do not unwrap to the SDK's error.
func TestWrapMasksSecrets(t *testing.T) {
	s := New(map[string]string{
		keySharedKeyAccountName:            "devstoreaccount1",
		"adls.auth.shared-key.account.key": "AccKey+/3==",
		"adls.sas-token.devstoreaccount1":  "sv=2022&sig=Sig%2Bnature5",
	})
	const loc = "abfs://c@devstoreaccount1.dfs.core.windows.net/f"
	raw := fmt.Errorf("GET https://devstoreaccount1.blob.core.windows.net/c/f?sv=2022&sig=Sig%%2Bnature5 key AccKey+/3==: %w", context.DeadlineExceeded)
	err := s.wrap("get", loc, raw)
	for _, secret := range []string{"nature5", "AccKey"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows %s", err, secret)
		}
	}
	if !strings.Contains(err.Error(), "azure get "+loc) || !strings.Contains(err.Error(), "devstoreaccount1") {
		t.Errorf("error %q lost the operation, the location or the account", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, raw) {
		t.Errorf("error %q unwraps to the wrong errors", err)
	}

	notFound := s.wrap("get", loc, fmt.Errorf("read: %w", &azcore.ResponseError{StatusCode: 404, ErrorCode: "BlobNotFound"}))
	var re *azcore.ResponseError
	if !errors.Is(notFound, fs.ErrNotExist) || errors.As(notFound, &re) || !strings.Contains(notFound.Error(), "HTTP 404 BlobNotFound") {
		t.Errorf("not found error %q", notFound)
	}
}
