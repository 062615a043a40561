package devenv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkAzuriteRequests measures what one small request costs the
// emulator as the container fills: the soak benchmark's store holds
// thousands of live objects (data files, manifests and the files that
// compaction replaced but kept snapshots still name). Each size puts its
// objects in, then times a PUT, a GET and a DELETE of a 1 KiB blob, one
// at a time as the benchmark's roles mostly send them.
//
//	go test -run '^$' -bench AzuriteRequests -benchtime 300x ./internal/devenv/
func BenchmarkAzuriteRequests(b *testing.B) {
	ctx := context.Background()
	a, err := StartAzurite(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Stop() })
	if err := a.CreateContainer(ctx, "warehouse"); err != nil {
		b.Fatal(err)
	}
	c := newBlobClient(b, a)
	body := make([]byte, 1024)
	stored := 0
	for _, objects := range []int{1_000, 4_000, 16_000} {
		// Fill to the size with 8 uploads in flight, as the uploader sends.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if _, err := c.UploadBuffer(ctx, "warehouse", fmt.Sprintf("fill/%06d.parquet", i), body, nil); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		start := time.Now()
		for ; stored < objects; stored++ {
			next <- stored
		}
		close(next)
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		b.Logf("%d objects stored, the last %s", objects, time.Since(start).Round(time.Millisecond))

		b.Run(fmt.Sprintf("objects=%d", objects), func(b *testing.B) {
			for i := range b.N {
				name := fmt.Sprintf("timed/%d-%d.parquet", objects, i)
				if _, err := c.UploadBuffer(ctx, "warehouse", name, body, nil); err != nil {
					b.Fatal(err)
				}
				resp, err := c.DownloadStream(ctx, "warehouse", name, nil)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if _, err := c.DeleteBlob(ctx, "warehouse", name, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(3*b.N), "µs/request")
		})
	}
}
