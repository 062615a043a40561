package devenv

import "fmt"

// ClicksDataset returns the YAML of the `datasets` entry that maps the
// generator's click events (NewEvent) into the table web.clicks,
// partitioned by tenant and day, creating it when missing: the dataset of
// the demo and of the end-to-end tests.
func ClicksDataset(topic string) string {
	return fmt.Sprintf(`  - name: clicks
    topic: %s
    table: web.clicks
    customMapping:
      event_id: id
      tenant: meta.tenant
      ts: meta.ts
      country: geo.country
      kind: kind
      amount: amount
      user: user
      tags: tags
      duration_ms: duration_ms
    bloomFilterColumns: [event_id]
    create:
      columns:
        - {name: event_id, type: string, required: true}
        - {name: tenant, type: string}
        - {name: ts, type: timestamptz, required: true}
        - {name: country, type: string}
        - {name: kind, type: string}
        - {name: amount, type: double}
        - {name: user, type: "struct<id:long,agent:string>"}
        - {name: tags, type: "list<string>"}
        - {name: duration_ms, type: long}
      partition:
        - {column: tenant, transform: identity}
        - {column: ts, transform: day}
`, topic)
}
