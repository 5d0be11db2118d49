package plan

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// servedReader and servedWriter answer as their reader and writer do, except that the 404
// of a resource the API server does not serve is a passing error (see
// NotServedAsUnavailable).
type servedReader struct{ client.Reader }

func (r servedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return NotServedAsUnavailable(r.Reader.Get(ctx, key, obj, opts...))
}

func (r servedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return NotServedAsUnavailable(r.Reader.List(ctx, list, opts...))
}

type servedWriter struct{ client.Writer }

func (w servedWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return NotServedAsUnavailable(w.Writer.Apply(ctx, obj, opts...))
}

func (w servedWriter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return NotServedAsUnavailable(w.Writer.Create(ctx, obj, opts...))
}

func (w servedWriter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return NotServedAsUnavailable(w.Writer.Delete(ctx, obj, opts...))
}

func (w servedWriter) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return NotServedAsUnavailable(w.Writer.Update(ctx, obj, opts...))
}

func (w servedWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return NotServedAsUnavailable(w.Writer.Patch(ctx, obj, patch, opts...))
}

func (w servedWriter) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return NotServedAsUnavailable(w.Writer.DeleteAllOf(ctx, obj, opts...))
}

// reader is what the engine reads through.
func (e *Engine) reader() client.Reader { return servedReader{e.Reader} }

// writer is what the engine writes through.
func (e *Engine) writer() client.Writer { return servedWriter{e.Writer} }
