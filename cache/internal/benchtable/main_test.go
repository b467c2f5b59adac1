package main

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	in := `goos: linux
BenchmarkCache/sluice/JSON_Set_Small-2   	    2000	     30000 ns/op	        45.00 stored-B	     396 B/op	      11 allocs/op
BenchmarkCache/sluice/JSON_Get_Small-2   	    2000	     30000 ns/op	     396 B/op	      11 allocs/op
BenchmarkCache/redis/JSON_Set_Small-2    	    2000	     76117 ns/op	     395 B/op	       9 allocs/op
BenchmarkCache/redis/JSON_Set_Small-2    	    2000	     70000 ns/op	     395 B/op	       9 allocs/op
BenchmarkCache/redis/JSON_Set_Small-2    	    2000	   1234567 ns/op	     395 B/op	       9 allocs/op
BenchmarkCache/redis/JSON_Get_Small-2    	    2000	     40000 ns/op	     552 B/op	      14 allocs/op
BenchmarkCache/redis/Hash_Set_Small-2    	    2000	     60000 ns/op	     999 B/op	      44 allocs/op
BenchmarkCache/redis/JSON_Get_Large-2    	    2000	     80000 ns/op	    1624 B/op	      24 allocs/op
BenchmarkBatch/redis/MSet_Small-2        	  796969	      1338 ns/op	     180 B/op	       2 allocs/op
BenchmarkOther-2                         	     100	         5.5 ns/op
--- SKIP: BenchmarkCache/sluice/Hash_Set_Small
PASS
`
	tb := newTable()
	if err := tb.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	tb.write(&out)
	want := "| Benchmark | Target | Iterations | Time (ns/op) | Alloc (B/op) | Allocs/op | Stored (B) |\n" +
		"| :-- | :-- | --: | --: | --: | --: | --: |\n" +
		"| **Small Struct** | | | | | | |\n" +
		"| `JSON_Set_Small` | sluice | 2,000 | 30,000 | 396 | 11 | 45 |\n" +
		"| `JSON_Set_Small` | redis | 2,000 | 76,117 | 395 | 9 |  |\n" +
		"| `JSON_Get_Small` | sluice | 2,000 | 30,000 | 396 | 11 |  |\n" +
		"| `JSON_Get_Small` | redis | 2,000 | 40,000 | 552 | 14 |  |\n" +
		"| `Hash_Set_Small` | redis | 2,000 | 60,000 | 999 | 44 |  |\n" +
		"| | | | | | | |\n" +
		"| **Large Struct** | | | | | | |\n" +
		"| `JSON_Get_Large` | redis | 2,000 | 80,000 | 1,624 | 24 |  |\n" +
		"| | | | | | | |\n" +
		"| **Batch of 100, Small (per value)** | | | | | | |\n" +
		"| `MSet_Small` | redis | 796,969 | 1,338 | 180 | 2 |  |\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
