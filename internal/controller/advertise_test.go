package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	advisorv1alpha1 "github.com/kubevirt/virt-advisor-operator/api/v1alpha1"
	"github.com/kubevirt/virt-advisor-operator/internal/advertise"
)

var _ = Describe("Advertising the profiles", func() {
	const namespace = "virt-advisor-operator-system"
	var advertiser *advertise.Advertiser

	BeforeEach(func() {
		resetCluster()
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
		deleteAndWait(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: advertise.AdvertisedRecordName}})
		advertiser = &advertise.Advertiser{Client: k8s, Reader: k8s, Profiles: registry, Namespace: namespace, Log: logf.Log}
	})

	It("creates an ignored config per profile, described by annotations, and never recreates one the user deleted", func() {
		Expect(advertiser.Start(ctx)).To(Succeed())
		vpc := waitPhase(advisorv1alpha1.PhaseIgnored)
		Expect(vpc.Spec.Action).To(Equal(advisorv1alpha1.ActionIgnore))
		Expect(vpc.Labels).To(HaveKeyWithValue(advertise.AdvertisedLabel, "true"))
		Expect(vpc.Annotations).To(HaveKeyWithValue(advertise.DescriptionAnnotation, ContainSubstring("live-migrates VMs")))
		Expect(vpc.Annotations).To(HaveKeyWithValue(advertise.ImpactSummaryAnnotation, ContainSubstring("reboots worker nodes")))
		Expect(vpc.Status.Items).To(BeEmpty(), "an advertised config drafts nothing until its action changes")
		expectConditions(vpc, "Ignored")

		record := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: advertise.AdvertisedRecordName}, record)).To(Succeed())
		Expect(record.Data).To(HaveKey(configName))

		deleteAndWait(getConfig())
		Expect(advertiser.Start(ctx)).To(Succeed())
		Consistently(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Name: configName}, &advisorv1alpha1.VirtPlatformConfig{}))
		}).Should(BeTrue(), "a config the user deleted must stay deleted")
	})

	It("leaves a config the user created first as it is", func() {
		createConfig(advisorv1alpha1.VirtPlatformConfigSpec{Action: advisorv1alpha1.ActionDryRun})
		Expect(advertiser.Start(ctx)).To(Succeed())
		vpc := waitPhase(advisorv1alpha1.PhaseReviewRequired)
		Expect(vpc.Spec.Action).To(Equal(advisorv1alpha1.ActionDryRun))
		Expect(vpc.Annotations).NotTo(HaveKey(advertise.DescriptionAnnotation))
	})
})
