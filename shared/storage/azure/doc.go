// Package azure stores objects in Azure Blob Storage (and Azure Data Lake
// Storage Gen2 accounts, through their blob endpoint) for locations of the
// form
//
//	abfs[s]://<container>@<account>.dfs.core.windows.net/<path>
//	wasb[s]://<container>@<account>.blob.core.windows.net/<path>
//
// Credentials and endpoints come from the catalog properties, with the key
// names and the order of precedence of iceberg-go's Azure file IO
// (io/gocloud/azure), so that the uploader writes where the catalog's file
// IO would:
//
//  1. adls.auth.shared-key.account.name and adls.auth.shared-key.account.key;
//  2. adls.sas-token.<host>, the host being the location's, e.g.
//     account.dfs.core.windows.net;
//  3. adls.connection-string.<account>;
//  4. adls.auth.managed-identity.enabled=true, with adls.client-id for a
//     user-assigned identity;
//  5. otherwise DefaultAzureCredential (environment, workload identity,
//     managed identity, Azure CLI).
//
// adls.endpoint replaces the storage domain and adls.protocol (https by
// default) the scheme; an endpoint that is an IP address or localhost, as
// for Azurite (adls.endpoint=127.0.0.1:10000, adls.protocol=http), is
// addressed path-style: http://127.0.0.1:10000/<account>/<container>/<path>.
// Without adls.endpoint the domain is the location's, with its dfs. prefix
// read as blob., since the blob API serves both kinds of account.
//
// A Put of an existing name replaces the blob whole (a block blob commit is
// atomic). Large uploads go in blocks read straight from the source file,
// so a 64 MiB segment is never held in memory. Error texts carry the
// operation, the location, and the HTTP status and Azure error code, never
// a key, SAS token or connection string.
package azure
