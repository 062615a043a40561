package config

import (
	"fmt"
	"strings"
)

// validateUpsert checks what of a dataset's upsert block can be checked
// without its table: the table's own columns are checked at start
// (consumer and committer), against the schema the catalog holds.
func validateUpsert(p string, d Dataset, bad func(key, problem string, args ...any)) {
	u := d.Upsert
	if u == nil {
		return
	}
	if len(u.KeyColumns) == 0 {
		bad(p+".upsert.keyColumns", "required: list the columns that identify a row, for example [order_id]")
	}
	seen := map[string]bool{}
	for j, k := range u.KeyColumns {
		switch {
		case strings.TrimSpace(k) == "":
			bad(fmt.Sprintf("%s.upsert.keyColumns[%d]", p, j), "empty column name")
		case seen[k]:
			bad(fmt.Sprintf("%s.upsert.keyColumns[%d]", p, j), "%q is listed twice", k)
		}
		seen[k] = true
	}
	if d.Create != nil {
		cols := map[string]bool{}
		for _, c := range d.Create.Columns {
			cols[c.Name] = true
		}
		for j, k := range u.KeyColumns {
			if len(d.Create.Columns) > 0 && !cols[k] {
				bad(fmt.Sprintf("%s.upsert.keyColumns[%d]", p, j), "%q is not a column of create.columns", k)
			}
		}
		for j, pf := range d.Create.Partition {
			if pf.Column != "" && !seen[pf.Column] {
				bad(fmt.Sprintf("%s.create.partition[%d].column", p, j),
					"%q is not a key column: with upsert, a table is partitioned by key columns only (or not at all), or an update that moves a key to another partition would leave its old row there", pf.Column)
			}
		}
	}
	if w := u.DeleteWhen; w != nil {
		if strings.TrimSpace(w.Path) == "" {
			bad(p+".upsert.deleteWhen.path", "required: the field of the value that marks a delete, for example op")
		}
		if len(w.Equals) == 0 {
			bad(p+".upsert.deleteWhen.equals", "required: the values of deleteWhen.path that mark a delete, for example [d, delete]")
		}
	}
}
