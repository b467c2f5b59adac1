package server

import (
	"unsafe"

	"github.com/sluicedb/sluice/config"
	"github.com/sluicedb/sluice/resp"
	"github.com/sluicedb/sluice/sortkeys"
	"github.com/sluicedb/sluice/store"
)

// SORT and SORT_RO (Redis's sort.c). BY and GET read keys whose names come
// from the data being sorted, so both commands run with the keyspace
// exclusively locked; their declared key positions (the sorted key and the
// STORE destination) only feed COMMAND GETKEYS.

func sortCommand(c *Client, args [][]byte)   { sortGeneric(c, args, false) }
func sortRoCommand(c *Client, args [][]byte) { sortGeneric(c, args, true) }

func sortGeneric(c *Client, args [][]byte, readonly bool) {
	o := sortkeys.Options{LimitCount: -1, Script: c.fromScript}
	var (
		storekey []byte
		gets     [][]byte
	)
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case eq(a, "asc"):
			o.Desc = false
		case eq(a, "desc"):
			o.Desc = true
		case eq(a, "alpha"):
			o.Alpha = true
		case eq(a, "limit") && left >= 2:
			var ok bool
			if o.LimitStart, ok = resp.ParseInt(args[j+1]); ok {
				o.LimitCount, ok = resp.ParseInt(args[j+2])
			}
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			j += 2
		case !readonly && eq(a, "store") && left >= 1:
			storekey = args[j+1]
			j++
		case eq(a, "by") && left >= 1:
			o.By = args[j+1]
			// A constant BY pattern means: do not sort (and, as in
			// Redis, a later BY with a '*' does not undo that).
			if sortkeys.Constant(o.By) {
				o.DontSort = true
			} else if !c.aclSortAllowed(args) {
				c.w.Error("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case eq(a, "get") && left >= 1:
			if !c.aclSortAllowed(args) {
				c.w.Error("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, args[j+1])
			j++
		default:
			c.w.Error(errSyntax)
			return
		}
	}

	o.Store = storekey != nil
	db := c.DB()
	e := db.Lookup(args[1])
	if e != nil {
		if kind := e.Kind(); kind != store.KindList && kind != store.KindSet && kind != store.KindZSet {
			c.w.Error(errWrongType)
			return
		}
	}
	items, ok := sortkeys.Sort(db, e, &o)
	if !ok {
		c.w.Error("ERR One or more scores can't be converted into double")
		return
	}

	outLen := int64(len(items))
	if len(gets) > 0 {
		outLen *= int64(len(gets))
	}
	var scratch []byte
	if storekey == nil {
		c.w.Array(int(outLen))
		for _, it := range items {
			if len(gets) == 0 {
				c.w.Bulk(it.Elem)
			}
			for _, g := range gets {
				if v, ok := sortkeys.Lookup(db, g, it.Elem, &scratch); ok {
					c.w.Bulk(v)
				} else {
					c.w.Null()
				}
			}
		}
		return
	}

	dst := store.NewList(int(c.srv.cfg.ListPackSize.Load()))
	for _, it := range items {
		if len(gets) == 0 {
			dst.PushBack(it.Elem)
		}
		for _, g := range gets {
			v, _ := sortkeys.Lookup(db, g, it.Elem, &scratch)
			dst.PushBack(v)
		}
	}
	if outLen > 0 {
		db.Set(storekey, store.NewObject(store.KindList, unsafe.Pointer(dst)), false)
		c.notify(config.NotifyList, "sortstore", storekey)
	} else if db.Delete(storekey) {
		c.notify(config.NotifyGeneric, "del", storekey)
	}
	c.w.Int(outLen)
}
