// Package satoken gives a test the credentials of a ServiceAccount of the test control plane:
// a token from the TokenRequest API, and a kubeconfig that authenticates with it. A process run
// with that kubeconfig has exactly the permissions the ServiceAccount is bound to, as in a pod.
package satoken

import (
	"context"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Token requests a token of the ServiceAccount namespace/name, valid for an hour.
func Token(ctx context.Context, admin *rest.Config, namespace, name string) (string, error) {
	clientset, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	expiration := int64(3600)
	tr, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// WriteKubeconfig writes to path a kubeconfig for the API server of admin that authenticates
// with a token of the ServiceAccount namespace/name.
func WriteKubeconfig(ctx context.Context, admin *rest.Config, namespace, name, path string) error {
	token, err := Token(ctx, admin, namespace, name)
	if err != nil {
		return err
	}
	const cluster = "test"
	user := "system:serviceaccount:" + namespace + ":" + name
	kubeconfig := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{
			cluster: {Server: admin.Host, CertificateAuthorityData: admin.CAData},
		},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{cluster: {Cluster: cluster, AuthInfo: user, Namespace: namespace}},
		CurrentContext: cluster,
	}
	data, err := clientcmd.Write(kubeconfig)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
