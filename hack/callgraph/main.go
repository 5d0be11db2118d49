// Command callgraph prints the calls between the functions of one Go package that form a
// cycle, and the functions that call themselves. It exits with 1 when it finds any.
//
//	go run ./hack/callgraph ./internal/controller
package main

import (
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: callgraph <package>")
		os.Exit(2)
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, os.Args[1])
	if err != nil || len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		fmt.Fprintln(os.Stderr, "load", os.Args[1], err, pkgs)
		os.Exit(2)
	}
	pkg := pkgs[0]
	edges := map[string]map[string]bool{}
	var funcs []string
	for _, file := range pkg.Syntax {
		for _, decl := range file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			caller := pkg.TypesInfo.Defs[fd.Name].(*types.Func)
			from := name(caller)
			funcs = append(funcs, from)
			edges[from] = map[string]bool{}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				var id *ast.Ident
				switch e := n.(type) {
				case *ast.Ident:
					id = e
				case *ast.SelectorExpr:
					id = e.Sel
				default:
					return true
				}
				// A function used as a value counts as a call: it is called later.
				if f, ok := pkg.TypesInfo.Uses[id].(*types.Func); ok && f.Pkg() == pkg.Types {
					edges[from][name(f)] = true
				}
				return true
			})
		}
	}
	found := false
	for _, f := range funcs {
		if edges[f][f] {
			fmt.Printf("calls itself: %s\n", f)
			found = true
		}
	}
	for _, scc := range components(funcs, edges) {
		if len(scc) > 1 {
			sort.Strings(scc)
			fmt.Printf("cycle of %d: %s\n", len(scc), strings.Join(scc, " "))
			found = true
		}
	}
	if found {
		os.Exit(1)
	}
	fmt.Printf("%s: %d functions, no cycle, no function calls itself\n", pkg.PkgPath, len(funcs))
}

func name(f *types.Func) string {
	if recv := f.Type().(*types.Signature).Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := t.(*types.Named); ok {
			return n.Obj().Name() + "." + f.Name()
		}
	}
	return f.Name()
}

// components returns the strongly connected components of the graph (Tarjan).
func components(nodes []string, edges map[string]map[string]bool) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		succ := make([]string, 0, len(edges[v]))
		for w := range edges[v] {
			succ = append(succ, w)
		}
		slices.Sort(succ)
		for _, w := range succ {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			out = append(out, scc)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}
