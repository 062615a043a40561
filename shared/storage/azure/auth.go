package azure

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Catalog property keys, as iceberg-go's io package names them.
const (
	keySASTokenPrefix         = "adls.sas-token."
	keyConnectionStringPrefix = "adls.connection-string."
	keySharedKeyAccountName   = "adls.auth.shared-key.account.name"
	keySharedKeyAccountKey    = "adls.auth.shared-key.account.key"
	keyEndpoint               = "adls.endpoint"
	keyProtocol               = "adls.protocol"
	keyManagedIdentity        = "adls.auth.managed-identity.enabled"
	keyClientID               = "adls.client-id"
)

// retryOptions keep the SDK's own retries short: the caller retries a
// failed upload at its next scan, and a long hidden retry loop would only
// delay the drain at shutdown.
var retryOptions = policy.RetryOptions{
	MaxRetries:    2,
	TryTimeout:    2 * time.Minute,
	RetryDelay:    200 * time.Millisecond,
	MaxRetryDelay: 2 * time.Second,
}

func (s *Store) clientOptions() azcore.ClientOptions {
	return azcore.ClientOptions{
		Transport: &http.Client{Transport: s.transport},
		Retry:     retryOptions,
	}
}

// newContainerClient builds the client of l's container with the first
// credential the properties give, in iceberg-go's order.
func (s *Store) newContainerClient(l Location) (*container.Client, error) {
	opts := &container.ClientOptions{ClientOptions: s.clientOptions()}
	svc, err := serviceURL(l, s.props)
	if err != nil {
		return nil, err
	}
	containerURL := svc + "/" + l.Container
	if name := s.props[keySharedKeyAccountName]; name != "" {
		key := s.props[keySharedKeyAccountKey]
		if key == "" {
			return nil, fmt.Errorf("shared-key authentication needs both %s and %s", keySharedKeyAccountName, keySharedKeyAccountKey)
		}
		cred, err := azblob.NewSharedKeyCredential(name, key)
		if err != nil {
			// The SDK's message would be about the key's encoding; say so
			// without quoting it.
			return nil, fmt.Errorf("%s is not a valid base64 account key", keySharedKeyAccountKey)
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	}
	if sas, ok := s.props[keySASTokenPrefix+l.Host]; ok {
		return container.NewClientWithNoCredential(containerURL+"?"+strings.TrimPrefix(sas, "?"), opts)
	}
	if cs, ok := s.props[keyConnectionStringPrefix+l.Account]; ok {
		c, err := container.NewClientFromConnectionString(cs, l.Container, opts)
		if err != nil {
			return nil, fmt.Errorf("%s%s: not a valid connection string", keyConnectionStringPrefix, l.Account)
		}
		return c, nil
	}
	cred, err := s.tokenCredential()
	if err != nil {
		return nil, err
	}
	return container.NewClient(containerURL, cred, opts)
}

// tokenCredential returns the store's one Entra ID credential, made at
// first use.
func (s *Store) tokenCredential() (azcore.TokenCredential, error) {
	if s.cred != nil {
		return s.cred, nil
	}
	var (
		cred azcore.TokenCredential
		err  error
	)
	if s.props[keyManagedIdentity] == "true" {
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: s.clientOptions()}
		if id := s.props[keyClientID]; id != "" {
			o.ID = azidentity.ClientID(id)
		}
		cred, err = azidentity.NewManagedIdentityCredential(o)
		if err != nil {
			err = fmt.Errorf("managed identity credential: %w", err)
		}
	} else {
		cred, err = azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: s.clientOptions()})
		if err != nil {
			err = fmt.Errorf("no Azure credential in the catalog properties (adls.*) and DefaultAzureCredential: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	if cred == nil {
		return nil, errors.New("no Azure credential")
	}
	s.cred = cred
	return cred, nil
}
