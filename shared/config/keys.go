package config

import (
	"reflect"
	"strings"
)

// KeyPaths returns the path of every key of the configuration file, in
// the order of the Config struct: "ingestion.wal.maxFileAgeMinutes",
// "datasets[].create.columns[].type", ... A list of mappings appears as
// the list's key ("datasets") and its items' keys ("datasets[].name"); an
// optional mapping ("datasets[].create") as its key and its keys. Plain
// sections ("ingestion", "ingestion.wal") are not keys of their own. The
// catalog's pass-through properties, every key of catalog but name, appear
// once, as "catalog.<property>".
func KeyPaths() []string {
	var paths []string
	walkKeys(reflect.TypeOf(Config{}), "", func(path string, _ reflect.Type) {
		paths = append(paths, path)
	})
	return paths
}

// walkKeys calls visit with the path and Go type of every key under t,
// following the yaml tags that decodeNode follows.
func walkKeys(t reflect.Type, path string, visit func(path string, t reflect.Type)) {
	if t == catalogType {
		visit(join(path, "name"), reflect.TypeOf(""))
		visit(join(path, "<property>"), reflect.TypeOf(""))
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		p := join(path, tag)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			walkKeys(ft, p, visit)
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			visit(p, ft)
			walkKeys(ft.Elem(), p, visit)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			visit(p, ft)
			walkKeys(ft.Elem(), p+"[]", visit)
		default:
			visit(p, ft)
		}
	}
}
